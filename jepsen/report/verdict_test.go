package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

// The verdict and the exit status follow the actions checker.
func TestActionsInTheVerdict(t *testing.T) {
	r := historytest.NewActRun()
	rid := r.Act(2, history.ActRebuild, history.OK, 202)
	r.Effect("provision", "rebuild", rid, historytest.UAN1)
	r.Effect("provision", "rebuild", "", historytest.UAN4)
	r.ReadB(2, "ACTIVE", "")
	run := check.RunInfo{Started: "test", Workload: history.WorkloadActions}
	v := check.All(check.Input{Ops: r.H.Ops, Final: r.FS, Effects: r.Log, Recovery: time.Second, VizDir: t.TempDir(), Run: run, Timeout: 10 * time.Second})
	if v.Actions == nil || v.Valid || v.ExitCode() != 1 || v.Actions.Counts["duplicate-side-effect"] != 1 {
		t.Fatalf("verdict %v, exit %d, actions %+v", v.Valid, v.ExitCode(), v.Actions)
	}
	c := historytest.CleanActions()
	v = check.All(check.Input{Ops: c.H.Ops, Final: c.FS, Effects: c.Log, Recovery: time.Second, VizDir: t.TempDir(), Run: run, Timeout: 10 * time.Second})
	if !v.Actions.Valid {
		t.Fatalf("clean actions invalid in the verdict: %+v", v.Actions.Anomalies)
	}
	dir := t.TempDir()
	if err := WriteMarkdown(dir, v); err != nil {
		t.Fatal(err)
	}
}

// A data race in an agent's log fails the run (exit 1) and is shown.
func TestDataRaceFailsTheRun(t *testing.T) {
	h := historytest.CleanHistory()
	races := map[string][]string{"n2": {"WARNING: DATA RACE\nWrite at 0x00c by goroutine 9:\n  corral/cluster.(*Node).f()\n"}}
	v := check.All(check.Input{Ops: h.Ops, Final: historytest.CleanFinal(), Recovery: time.Second, Races: races,
		Run: check.RunInfo{Started: "test"}, Timeout: 10 * time.Second})
	if v.Valid || v.ExitCode() != 1 {
		t.Fatalf("valid %v exit %d", v.Valid, v.ExitCode())
	}
	dir := t.TempDir()
	if err := WriteMarkdown(dir, v); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(b), "## Data races") || !strings.Contains(string(b), "(*Node).f()") {
		t.Fatalf("report:\n%s", b)
	}
}

func TestMassBootReportAndRecheckFiles(t *testing.T) {
	m := historytest.NewMassRun()
	m.Waves[0].Snapshots[0].Servers[1].Node = historytest.MassN1
	dir := t.TempDir()
	v := check.All(check.Input{Ops: m.H.Ops, Final: m.FS, Waves: m.Waves, Recovery: time.Second, VizDir: t.TempDir(),
		Run: check.RunInfo{Started: "test", Workload: history.WorkloadMassBoot, Nodes: 2}, Timeout: 10 * time.Second})
	if err := Write(dir, v, m.H.Ops, nil, m.Waves, false); err != nil {
		t.Fatal(err)
	}
	var waves []history.Wave
	if err := history.ReadJSON(dir+"/waves.json", &waves); err != nil || len(waves) != 2 {
		t.Fatalf("waves.json: %v, %d waves", err, len(waves))
	}
	var report strings.Builder
	Summary(&report, dir, v)
	if !strings.Contains(report.String(), "massboot: false") || !strings.Contains(report.String(), "INVALID") {
		t.Fatalf("summary: %s", report.String())
	}
}
