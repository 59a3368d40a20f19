package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/report"
)

// recheck re-runs the checkers on a results folder, into its recheck/
// folder: the run's own files stay as they were.
func recheck(cfg Config) int {
	ops, err := history.ReadFile(filepath.Join(cfg.Recheck, history.HistoryFile))
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	var fs history.FinalState
	var windows []history.Window
	var old check.Verdict
	for name, v := range map[string]any{history.FinalFile: &fs, history.WindowsFile: &windows, history.VerdictFile: &old} {
		if err := history.ReadJSON(filepath.Join(cfg.Recheck, name), v); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 2
		}
	}
	var waves []history.Wave
	if old.Run.Workload == history.WorkloadMassBoot {
		if err := history.ReadJSON(filepath.Join(cfg.Recheck, history.WavesFile), &waves); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 2
		}
	}
	var effects client.EffectLog
	switch {
	case old.Run.Workload == history.WorkloadActions:
		if effects, err = history.ReadEffects(filepath.Join(cfg.Recheck, history.EffectsFile)); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return 2
		}
	case fs.Neutron != nil:
		// The VIF checks read it; without it (a real Ironic's run) they
		// are skipped with a note.
		if effects, err = history.ReadEffects(filepath.Join(cfg.Recheck, history.EffectsFile)); err != nil {
			effects = client.EffectLog{Error: fmt.Sprintf("no side-effect log: %v", err)}
		}
	}
	var injected []string
	ops, injected = applyInjections(cfg, ops)
	run := old.Run
	run.Injected = append(run.Injected, injected...)
	rec := time.Duration(old.Availability.FinalRecoveryS * float64(time.Second))
	out := filepath.Join(cfg.Recheck, "recheck") // the run's own files stay as they were
	_ = os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	v := check.All(check.Input{Ops: ops, Final: fs, Windows: windows, Waves: waves, Effects: effects, Recovery: rec,
		RecoveryError: old.Availability.FinalError, HealError: old.Faults.FinalHealError, Races: old.DataRaces, Run: run,
		VizDir: out, Timeout: cfg.CheckTimeout})
	if err := report.Write(out, v, ops, windows, waves, len(injected) > 0); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return 2
	}
	report.Summary(os.Stdout, out, v)
	return v.ExitCode()
}

// applyInjections adds the anomalies -inject-lost-ack and
// -inject-resurrection ask for to the history, and names them.
func applyInjections(cfg Config, ops []history.Op) ([]history.Op, []string) {
	resurrected := false
	if cfg.InjectLostAck {
		ops = history.InjectLostAck(ops)
	}
	if cfg.InjectResurrec {
		ops, resurrected = history.InjectResurrection(ops)
	}
	return ops, history.DescribeInjection(cfg.InjectLostAck, cfg.InjectResurrec, resurrected)
}
