package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RunInfo describes the run.
type RunInfo struct {
	Started  string   `json:"started"`
	Duration string   `json:"duration"`
	Nemesis  []string `json:"nemesis"`
	Seed     int64    `json:"seed"`
	Clients  int      `json:"clients"`
	Peers    int      `json:"peers"`
	Ironic   string   `json:"ironic"`
	Nodes    int      `json:"ironic_nodes"`
	Injected []string `json:"injected,omitempty"`
	Corral   string   `json:"corral"` // git describe of the source built
}

// Verdict is verdict.json: every checker's result. Valid only if the
// linearizability, final-state and availability checkers all are; the
// default-read check is informational (default reads are documented as
// possibly stale while a deposed leader does not know it yet).
type Verdict struct {
	Valid        bool        `json:"valid"`
	Run          RunInfo     `json:"run"`
	Linearizable LinResult   `json:"linearizable"`
	DefaultReads LinResult   `json:"default_reads_informational"`
	Final        FinalResult `json:"final_state"`
	Availability AvailResult `json:"availability"`
	OpCounts     OpCounts    `json:"op_counts"`
	Windows      []Window    `json:"windows"`
}

// OpCounts counts completions by function and type.
type OpCounts map[string]map[string]int

func countOps(pairs []Pair) OpCounts {
	c := OpCounts{}
	for _, p := range pairs {
		f := p.Invoke.F
		if c[f] == nil {
			c[f] = map[string]int{}
		}
		t := p.Type()
		if p.Invoke.F == FDelete && p.Complete != nil && p.Complete.Value.NotFound {
			t = "fail-404"
		}
		c[f][t]++
	}
	return c
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func verdictWord(ok bool) string {
	if ok {
		return "**valid**"
	}
	return "**INVALID**"
}

// WriteReport writes report.md.
func WriteReport(dir string, v Verdict) error {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# corral jepsen run %s", v.Run.Started)
	w("")
	w("Verdict: %s", verdictWord(v.Valid))
	w("")
	w("corral %s; %d peers, %d clients, %s, nemesis %s, Ironic: %s (%d nodes), seed %d.",
		v.Run.Corral, v.Run.Peers, v.Run.Clients, v.Run.Duration, strings.Join(v.Run.Nemesis, ","), v.Run.Ironic, v.Run.Nodes, v.Run.Seed)
	if len(v.Run.Injected) > 0 {
		w("")
		w("Faults injected into the recorded history (the checkers must catch them): %s.", strings.Join(v.Run.Injected, ", "))
	}
	w("")
	w("| checker | verdict | summary |")
	w("|---|---|---|")
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
	a := v.Availability
	w("| availability | %s | writes %.1f%% ok overall, %.1f%% outside faults; recovered %.1fs after the last heal |",
		verdictWord(a.Valid), 100*a.Overall.WriteAvail, 100*a.Healthy.WriteAvail, a.FinalRecoveryS)
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
		for _, t := range []string{OK, Fail, "fail-404", Info} {
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
			name += " (error: " + truncate(ws.FaultError, 80) + ")"
		}
		w("| %d | %s | %.1f | %.1f | %d/%d | %d/%d | %.0f | %.0f | %s |", i+1, name, ws.Start, ws.End,
			ws.WritesOK, ws.Writes, ws.ReadsOK, ws.Reads, ws.P50LatencyMS, ws.MaxLatencyMS, rec)
	}
	if a.FinalError != "" {
		w("")
		w("Final recovery failed: %s", a.FinalError)
	}
	writeLin := func(title string, r LinResult) {
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
	w("")
	w("Files: `history.jsonl` (every operation), `verdict.json`, `final.json` (state read after the heal), `windows.json`, `latency.png`, `logs/`.")
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

func causes(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedIDs(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
