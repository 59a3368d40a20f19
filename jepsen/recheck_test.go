package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

// recheckDir writes a results folder for -recheck: the history, a clean
// final state and the windows.
func recheckDir(t *testing.T, h *historytest.Hist, windows []history.Window) string {
	t.Helper()
	dir := t.TempDir()
	if err := history.WriteFile(filepath.Join(dir, "history.jsonl"), h.Ops); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"final.json": historytest.CleanFinal(), "windows.json": windows,
		"verdict.json": check.Verdict{Run: check.RunInfo{Started: "test"}}} {
		if err := history.WriteJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func recheckReport(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "recheck", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInjectFlagFailsTheRun re-checks a clean results folder, then again
// with -inject-lost-ack and -inject-resurrection: each must exit 1, and
// the folder's own history is left as it was.
func TestInjectFlagFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	if err := history.WriteFile(filepath.Join(dir, "history.jsonl"), historytest.CleanHistory().Ops); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"final.json": historytest.CleanFinal(), "windows.json": []history.Window{},
		"verdict.json": check.Verdict{Run: check.RunInfo{Started: "test"}}} {
		if err := history.WriteJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("clean recheck exited %d", code)
	}
	for _, flag := range []string{"-inject-lost-ack", "-inject-resurrection"} {
		if code := realMain([]string{"-recheck", dir, flag}); code != 1 {
			t.Fatalf("%s: exited %d, want 1", flag, code)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "recheck", "report.md"))
		if !strings.Contains(string(b), "INVALID") {
			t.Fatalf("%s: report does not say INVALID", flag)
		}
	}
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("the injections leaked into the saved history: clean recheck exited %d", code)
	}
}

// A fault the nemesis could not inject makes the run invalid (exit 2),
// even though every checker passes, and the report names the fault.
func TestFaultNotInjectedMakesTheRunInvalid(t *testing.T) {
	h := historytest.CleanHistory()
	w := historytest.Window(h, "pause", "n2,n3", func() { h.BootAs(8, "g", history.Info, 0) })
	w.Error = "SIGSTOP to n3: process is not running"
	r := check.Faults(history.NewIndex(h.Ops), []history.Window{w}, "")
	if r.Valid || len(r.Failed) != 1 || r.Failed[0].Window != 1 || !strings.Contains(r.Failed[0].Problem, "not injected: SIGSTOP to n3") {
		t.Fatalf("%+v", r)
	}
	dir := recheckDir(t, h, []history.Window{w})
	if code := realMain([]string{"-recheck", dir}); code != 2 {
		t.Fatalf("recheck exited %d, want 2", code)
	}
	rep := recheckReport(t, dir)
	for _, want := range []string{"NOT A VALID RUN", "## Faults that did not happen", "fault 1, pause n2,n3: not injected: SIGSTOP to n3"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}

// A fault that could not be undone (here: the partition's rules) is as
// bad: the rest of the run ran under a fault nobody scheduled. So is a
// failed heal after the workload.
func TestFaultNotHealedMakesTheRunInvalid(t *testing.T) {
	h := historytest.CleanHistory()
	w := historytest.Window(h, "partition-isolate-one", "{n1} | {n2,n3}", func() { h.BootAs(8, "g", history.Fail, 503) })
	w.HealError = "iptables -F JEPSEN-OUT: exit status 4"
	r := check.Faults(history.NewIndex(h.Ops), []history.Window{w}, "")
	if r.Valid || len(r.Failed) != 1 || !strings.Contains(r.Failed[0].Problem, "not healed: iptables -F") {
		t.Fatalf("%+v", r)
	}
	if r := check.Faults(history.NewIndex(h.Ops), nil, "resume n2: process is not running"); r.Valid {
		t.Fatalf("a failed final heal passed: %+v", r)
	}
	dir := recheckDir(t, h, []history.Window{w})
	if code := realMain([]string{"-recheck", dir}); code != 2 {
		t.Fatalf("recheck exited %d, want 2", code)
	}
	if rep := recheckReport(t, dir); !strings.Contains(rep, "NOT HEALED: iptables -F") {
		t.Errorf("the window table does not say the fault was not healed:\n%s", rep)
	}
}

// A window in which every operation succeeded quickly is reported as a
// warning; the run stays valid.
func TestUnfeltWindowIsAWarning(t *testing.T) {
	h := historytest.CleanHistory()
	w := historytest.Window(h, "pause", "n4", func() {
		h.Read(1, historytest.IDB, "b", "ACTIVE", "")
		h.Boot(8, "g", "gggg")
	})
	empty := historytest.Window(h, "kill", "n5", func() {})
	h.Read(1, historytest.IDB, "b", "ACTIVE", "")
	r := check.Faults(history.NewIndex(h.Ops), []history.Window{w, empty}, "")
	if !r.Valid || len(r.Unfelt) != 2 {
		t.Fatalf("want two warnings on a valid run: %+v", r)
	}
	if !strings.Contains(r.Unfelt[0].Problem, "none of the 2 operations") || r.Unfelt[1].Problem != "no operation ran during it" {
		t.Fatalf("%+v", r.Unfelt)
	}
	fs := historytest.CleanFinal()
	fs.Servers = append(fs.Servers, history.ServerState{ID: "gggg", Name: "g", Status: "ACTIVE", Host: "n2", Node: historytest.NodeY})
	dir := recheckDir(t, h, []history.Window{w, empty})
	if err := history.WriteJSON(filepath.Join(dir, "final.json"), fs); err != nil {
		t.Fatal(err)
	}
	realMain([]string{"-recheck", dir})
	rep := recheckReport(t, dir)
	for _, want := range []string{"## Warnings", "fault 1, pause n4: no operation saw an effect", "fault 2, kill n5: no operation ran during it"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}

// A saved run with -neutron is re-checked with its Neutron state and the
// simulator's log: clean it exits 0; with an orphan port, or a user's port
// not given back, it exits 1 and the report names them.
func TestRecheckNeutron(t *testing.T) {
	r := historytest.NewNeutronRun()
	dir := t.TempDir()
	write := func(fs history.FinalState) {
		t.Helper()
		if err := history.WriteFile(filepath.Join(dir, history.HistoryFile), r.H.Ops); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]any{history.FinalFile: fs, history.WindowsFile: []history.Window{},
			history.EffectsFile: r.Log, history.VerdictFile: check.Verdict{Run: check.RunInfo{Started: "test", Networks: "Neutron"}}} {
			if err := history.WriteJSON(filepath.Join(dir, name), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(r.FS)
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("clean recheck exited %d:\n%s", code, recheckReport(t, dir))
	}
	if rep := recheckReport(t, dir); !strings.Contains(rep, "## Neutron ports") || !strings.Contains(rep, "VIFs checked") {
		t.Fatalf("report lacks the Neutron part:\n%s", rep)
	}
	r.FS.Neutron.Ports = append(r.FS.Neutron.Ports, historytest.Port(historytest.PortA, historytest.IDA, "", "192.0.2.10", "fa:16:3e:00:00:0a", "corral"))
	p := r.PortOf(historytest.UserD)
	p.DeviceID, p.DeviceOwner, p.HostID = historytest.IDD, "compute:nova", historytest.NodeX
	write(r.FS)
	if code := realMain([]string{"-recheck", dir}); code != 1 {
		t.Fatalf("recheck with an orphan exited %d, want 1", code)
	}
	rep := recheckReport(t, dir)
	for _, want := range []string{"`neutron-orphan-port` " + historytest.IDA, "`neutron-user-port-not-released` " + historytest.IDD, "INVALID"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	// Without the simulator's log the VIFs are a note, not a failure.
	if err := os.Remove(filepath.Join(dir, history.EffectsFile)); err != nil {
		t.Fatal(err)
	}
	r = historytest.NewNeutronRun()
	write(r.FS)
	_ = os.Remove(filepath.Join(dir, history.EffectsFile))
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("recheck without side_effects.json exited %d", code)
	}
	if rep := recheckReport(t, dir); !strings.Contains(rep, "VIFs not checked: no side-effect log") {
		t.Fatalf("report does not say the VIFs were not checked:\n%s", rep)
	}
}
