package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// How the actions workload aims its faults: the nemesis waits up to
// aimWait for an action accepted once a fault is due, then strikes its
// owner strikeMin to strikeMax after the 202.
const (
	aimWait      = 8 * time.Second
	strikeMin    = 200 * time.Millisecond
	strikeMax    = 1500 * time.Millisecond
	actionSettle = 60 * time.Second // how long a client waits for an action to be over
)

// actions sets up the actions workload on wl's clients and aims the
// nemesis at the owners of the servers acted on.
func (r *runner) actions(wl *Workload, admin *Corral, nem *Nemesis) func(context.Context) {
	a := &Actions{W: wl, Admin: admin, Clients: r.cfg.ActionClients, Settle: actionSettle,
		StrikeMin: strikeMin, StrikeMax: strikeMax}
	nem.Aim, nem.AimWait = a.Aim, aimWait
	return a.Run
}

// sideEffects reads the simulator's side-effect log into side_effects.json.
func (r *runner) sideEffects(ctx context.Context, rec *Recorder) (EffectLog, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l := r.ir.SideEffects(cctx, rec.Start())
	if l.Error != "" {
		r.logf("%s", l.Error)
	} else {
		r.logf("the simulator logged %d side effects", len(l.SideEffects))
	}
	if err := writeJSON(filepath.Join(r.dir, "side_effects.json"), l); err != nil {
		return l, fmt.Errorf("write side_effects.json: %w", err)
	}
	return l, nil
}

// writeActions writes the actions checker's part of report.md.
func writeActions(w func(string, ...any), a *ActionResult) {
	w("")
	w("## Server actions and their side effects in Ironic")
	w("")
	w("| action | accepted | refused | unknown |")
	w("|---|---|---|---|")
	for _, k := range []string{ActRebuild, ActRebootHard, ActRebootSoft, ActStop, ActStart} {
		if c := a.ByKind[k]; c != nil {
			w("| %s | %d | %d | %d |", k, c[OK], c[Fail], c[Info])
		}
	}
	nodes, twice := 0, 0
	for _, n := range slices.Sorted(maps.Keys(a.Nodes)) {
		if a.Nodes[n].Doubled > 0 {
			nodes++
			twice += a.Nodes[n].Doubled
		}
	}
	w("")
	w("Rebuilds: %d nodes rebuilt; %d of them re-imaged twice for one request (%d requests).", len(a.Nodes), nodes, twice)
	if len(a.NoID) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(a.NoID)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, a.NoID[k]))
		}
		w("")
		w("Power changes and rebuilds Ironic took without a request id, by agent: %s.", strings.Join(parts, ", "))
	}
	if len(a.Anomalies) > 0 {
		w("")
		w("### Anomalies")
		w("")
		for _, an := range a.Anomalies {
			w("- `%s` %s: %s", an.Kind, an.Server, strings.ReplaceAll(an.Detail, "|", `\|`))
		}
		for _, k := range slices.Sorted(maps.Keys(a.Counts)) {
			if a.Counts[k] > 25 {
				w("- … %d `%s` in all", a.Counts[k], k)
			}
		}
	}
	if len(a.Notes) > 0 {
		w("")
		w("### Notes (not counted)")
		w("")
		for _, n := range a.Notes {
			w("- %s", n)
		}
	}
}
