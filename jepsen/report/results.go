package report

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/history"
)

// Write writes a run's results into dir: windows.json, waves.json (with
// -workload massboot), verdict.json, report.md and latency.png, and
// history.jsonl again when a fabricated anomaly was added to the history
// (the one recorded, in the run's own folder, is left as it was).
func Write(dir string, v check.Verdict, ops []history.Op, windows []history.Window, waves []history.Wave, injected bool) error {
	if injected {
		if err := history.WriteFile(filepath.Join(dir, history.HistoryFile), ops); err != nil {
			return err
		}
	}
	if err := history.WriteJSON(filepath.Join(dir, history.WindowsFile), windows); err != nil {
		return err
	}
	if v.Run.Workload == history.WorkloadMassBoot {
		if err := history.WriteJSON(filepath.Join(dir, history.WavesFile), waves); err != nil {
			return err
		}
	}
	if err := history.WriteJSON(filepath.Join(dir, history.VerdictFile), v); err != nil {
		return err
	}
	if err := WriteMarkdown(dir, v); err != nil {
		return err
	}
	return PlotLatency(filepath.Join(dir, "latency.png"), history.Pairs(ops), windows)
}

// Summary prints the verdict in a few lines, ending with the word the run
// is judged by and the report's path.
func Summary(w io.Writer, dir string, v check.Verdict) {
	fmt.Fprintf(w, "\nlinearizability: %v (%d servers, %d ops, %d illegal %s)\n", v.Linearizable.Valid,
		v.Linearizable.Keys, v.Linearizable.Ops, len(v.Linearizable.Illegal), causes(v.Linearizable.Causes))
	fmt.Fprintf(w, "default reads (informational): %v (%d illegal)\n", v.DefaultReads.Valid, len(v.DefaultReads.Illegal))
	if v.Run.Security != "" || v.Run.Auth != "" {
		fmt.Fprintf(w, "transport: %s; auth: %s\n", v.Run.Security, v.Run.Auth)
	}
	fmt.Fprintf(w, "final state: %v %v\n", v.Final.Valid, v.Final.Counts)
	if m := v.MassBoot; m != nil {
		fmt.Fprintf(w, "massboot: %v (%s) %v\n", m.Valid, m.Summary(), m.Counts)
	}
	if a := v.Actions; a != nil {
		fmt.Fprintf(w, "actions: %v (%s) %v\n", a.Valid, a.Summary(), a.Counts)
	}
	if v.Run.Networks != "" {
		fmt.Fprintf(w, "networks: %s\n", v.Run.Networks)
	}
	if n := v.Neutron; n != nil {
		fmt.Fprintf(w, "neutron: %v (%s) %v\n", n.Valid, n.Summary(), n.Counts)
	}
	if u := v.Upgrade; u != nil {
		fmt.Fprintf(w, "upgrade: %v (%s)\n", u.Valid, u.Summary())
	}
	fmt.Fprintf(w, "availability: %v (writes %.1f%% ok, recovery %.1fs)\n", v.Availability.Valid,
		100*v.Availability.Overall.WriteAvail, v.Availability.FinalRecoveryS)
	fmt.Fprintf(w, "faults: %v (%d windows, %d not injected or not healed, %d felt by no operation)\n", v.Faults.Valid,
		len(v.Windows), len(v.Faults.Failed), len(v.Faults.Unfelt))
	for _, f := range v.Faults.Failed {
		fmt.Fprintf(w, "  fault %d %s %s: %s\n", f.Window, f.Name, f.Detail, f.Problem)
	}
	if v.Faults.FinalHealError != "" {
		fmt.Fprintf(w, "  final heal: %s\n", v.Faults.FinalHealError)
	}
	if len(v.DataRaces) > 0 {
		fmt.Fprintf(w, "data races: %s\n", raceSummary(v.DataRaces))
	}
	word := "VALID"
	switch {
	case !v.Faults.Valid:
		word = "NOT A VALID RUN (a fault did not happen as scheduled)"
	case !v.Valid:
		word = "INVALID"
	}
	fmt.Fprintf(w, "verdict: %s — %s\n", word, filepath.Join(dir, "report.md"))
}
