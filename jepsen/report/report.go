package report

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/history"
)

func verdictWord(ok bool) string {
	if ok {
		return "**valid**"
	}
	return "**INVALID**"
}

// WriteMarkdown writes report.md.
func WriteMarkdown(dir string, v check.Verdict) error {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# corral jepsen run %s", v.Run.Started)
	w("")
	if !v.Faults.Valid {
		w("Verdict: **NOT A VALID RUN**: the history was not recorded under the faults this report names (see Faults that did not happen).")
	} else {
		w("Verdict: %s", verdictWord(v.Valid))
	}
	w("")
	race := ""
	if v.Run.Race {
		race = " (race detector)"
	}
	w("corral %s%s; %d peers, %d clients, %s, nemesis %s, Ironic: %s (%d nodes), seed %d.",
		v.Run.Corral, race, v.Run.Peers, v.Run.Clients, v.Run.Duration, strings.Join(v.Run.Nemesis, ","), v.Run.Ironic, v.Run.Nodes, v.Run.Seed)
	if v.Run.Security != "" || v.Run.Auth != "" {
		w("")
		w("Transport: %s; clients authenticate with %s.", v.Run.Security, v.Run.Auth)
	}
	if v.Run.Networks != "" {
		w("")
		w("Networks: %s.", v.Run.Networks)
	}
	if len(v.Run.Injected) > 0 {
		w("")
		w("Faults injected into the recorded history (the checkers must catch them): %s.", strings.Join(v.Run.Injected, ", "))
	}
	w("")
	w("| checker | verdict | summary |")
	w("|---|---|---|")
	w("| faults injected and healed | %s | %d windows, %d not injected or not healed%s; %d felt by no operation (warnings) |",
		verdictWord(v.Faults.Valid), len(v.Windows), len(v.Faults.Failed), finalHeal(v.Faults), len(v.Faults.Unfelt))
	l := v.Linearizable
	w("| linearizability (writes + linearizable reads) | %s | %d servers, %d operations, %d illegal %s, %d timed out |",
		verdictWord(l.Valid), l.Keys, l.Ops, len(l.Illegal), causes(l.Causes), len(l.Unknown))
	d := v.DefaultReads
	w("| default-consistency reads (informational) | %s | %d servers, %d operations, %d illegal |",
		verdictWord(d.Valid), d.Keys, d.Ops, len(d.Illegal))
	f := v.Final
	w("| final state (invariants 1-3) | %s | %d acked boots, %d unknown (%d applied), %d failed, %d acked deletes; %d live (%d ACTIVE, %d ERROR of which %d never scheduled), %d reservations, %d Ironic claims %s |",
		verdictWord(f.Valid), f.Acknowledged, f.Unknown, f.UnknownExist, f.Failed, f.DeletedAcks, f.LiveServers,
		f.ActiveServers, f.ErrorServers, f.Unscheduled, f.Reservations, f.IronicClaims, causes(f.Counts))
	if m := v.MassBoot; m != nil {
		w("| mass boot (node capacity, waves) | %s | %s %s |", verdictWord(m.Valid), m.Summary(), causes(m.Counts))
	}
	if ac := v.Actions; ac != nil {
		w("| server actions (side effects in Ironic, invariant 5) | %s | %s %s |", verdictWord(ac.Valid), ac.Summary(), causes(ac.Counts))
	}
	if n := v.Neutron; n != nil {
		w("| Neutron ports (no orphan, one per network, addresses, user ports given back) | %s | %s %s |", verdictWord(n.Valid), n.Summary(), causes(n.Counts))
	}
	if u := v.Upgrade; u != nil {
		w("| upgrade of a peer of an older release (-old-bin), the entry encoding's switch | %s | %s |", verdictWord(u.Valid),
			strings.ReplaceAll(u.Summary(), "|", `\|`))
	}
	a := v.Availability
	w("| availability | %s | writes %.1f%% ok overall, %.1f%% outside faults; recovered %.1fs after the last heal |",
		verdictWord(a.Valid), 100*a.Overall.WriteAvail, 100*a.Healthy.WriteAvail, a.FinalRecoveryS)
	w("| data races in the agents | %s | %s |", verdictWord(len(v.DataRaces) == 0), raceSummary(v.DataRaces))
	if len(v.Faults.Failed) > 0 || v.Faults.FinalHealError != "" {
		w("")
		w("## Faults that did not happen")
		w("")
		for _, f := range v.Faults.Failed {
			w("- fault %d, %s %s: %s", f.Window, f.Name, f.Detail, f.Problem)
		}
		if v.Faults.FinalHealError != "" {
			w("- the heal after the workload failed: %s", v.Faults.FinalHealError)
		}
	}
	if len(v.Faults.Unfelt) > 0 {
		w("")
		w("## Warnings")
		w("")
		w("Fault windows in which no operation saw an effect (none failed, ended with an unknown outcome or took longer than %.0f ms): the fault happened but tested little.", v.Faults.SlowMS)
		w("")
		for _, f := range v.Faults.Unfelt {
			w("- fault %d, %s %s: %s", f.Window, f.Name, f.Detail, f.Problem)
		}
	}
	w("")
	w("## Operations")
	w("")
	var fs []string
	for k := range v.OpCounts {
		fs = append(fs, k)
	}
	sort.Strings(fs)
	for _, k := range fs {
		var parts []string
		for _, t := range []string{history.OK, history.Fail, "fail-404", history.Info} {
			if n := v.OpCounts[k][t]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", t, n))
			}
		}
		w("- %s: %s", k, strings.Join(parts, ", "))
	}
	w("")
	w("## Fault windows")
	w("")
	w("| # | fault | from | to | writes ok | reads ok | p50 ms | max ms | recovery s |")
	w("|---|---|---|---|---|---|---|---|---|")
	for i, ws := range a.Windows {
		rec := fmt.Sprintf("%.2f", ws.RecoveryS)
		if ws.RecoveryS < 0 {
			rec = "—"
		}
		name := strings.ReplaceAll(ws.Name+" "+ws.Detail, "|", `\|`)
		if ws.FaultError != "" {
			name += " (NOT INJECTED: " + truncate(ws.FaultError, 80) + ")"
		}
		if ws.HealError != "" {
			name += " (NOT HEALED: " + truncate(ws.HealError, 80) + ")"
		}
		w("| %d | %s | %.1f | %.1f | %d/%d | %d/%d | %.0f | %.0f | %s |", i+1, name, ws.Start, ws.End,
			ws.WritesOK, ws.Writes, ws.ReadsOK, ws.Reads, ws.P50LatencyMS, ws.MaxLatencyMS, rec)
	}
	if a.FinalError != "" {
		w("")
		w("Final recovery failed: %s", a.FinalError)
	}
	writeLin := func(title string, r check.LinResult) {
		if len(r.Illegal) == 0 && len(r.Unknown) == 0 {
			return
		}
		w("")
		w("## %s", title)
		for _, an := range r.Illegal {
			w("")
			w("### %s %v (%s)", an.Key, an.IDs, an.Cause)
			if an.Plot != "" {
				w("")
				w("Visualization: [%s](%s)", an.Plot, an.Plot)
			}
			w("")
			w("```")
			for _, line := range an.History {
				w("%s", line)
			}
			w("```")
		}
		if len(r.Unknown) > 0 {
			w("")
			w("Timed out (no verdict): %s", strings.Join(r.Unknown, ", "))
		}
	}
	if len(v.DataRaces) > 0 {
		w("")
		w("## Data races")
		for _, agent := range slices.Sorted(maps.Keys(v.DataRaces)) {
			w("")
			w("### %s (%d reports; the first)", agent, len(v.DataRaces[agent]))
			w("")
			w("```")
			w("%s", strings.TrimSpace(v.DataRaces[agent][0]))
			w("```")
		}
	}
	writeLin("Linearizability anomalies", l)
	writeLin("Default-read anomalies (informational)", d)
	if len(f.Anomalies) > 0 {
		w("")
		w("## Final-state anomalies")
		w("")
		for _, an := range f.Anomalies {
			w("- `%s` %s: %s", an.Kind, an.Server, an.Detail)
		}
		for k, n := range f.Counts {
			if n > 25 {
				w("- … %d `%s` in all", n, k)
			}
		}
	}
	if m := v.MassBoot; m != nil && (len(m.Anomalies) > 0 || len(m.Notes) > 0) {
		w("")
		w("## Mass-boot anomalies and notes")
		w("")
		for _, an := range m.Anomalies {
			w("- `%s` %s: %s", an.Kind, an.Server, an.Detail)
		}
		for _, n := range m.Notes {
			w("- note: %s", n)
		}
	}
	if ac := v.Actions; ac != nil {
		writeActions(w, ac)
	}
	if n := v.Neutron; n != nil {
		writeNeutron(w, n)
	}
	w("")
	w("Files: `history.jsonl` (every operation), `verdict.json`, `final.json` (state read after the heal), `windows.json`, `latency.png`, `logs/`; `waves.json` with `-workload massboot`; `side_effects.json` with `-workload actions` or `-neutron`.")
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

func finalHeal(f check.FaultResult) string {
	if f.FinalHealError == "" {
		return ""
	}
	return ", and the final heal failed"
}

func causes(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// raceSummary counts race reports per agent: "none" or "n1 2, n3 1".
func raceSummary(m map[string][]string) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, len(m[k])))
	}
	return strings.Join(parts, ", ")
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
