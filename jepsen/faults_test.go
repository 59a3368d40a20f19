package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// window spans the events added by during, with a millisecond either side.
func window(h *hist, name, detail string, during func()) Window {
	w := Window{Name: name, Detail: detail, Start: h.t + int64(time.Millisecond)/2}
	during()
	w.End = h.t + int64(time.Millisecond)/2
	return w
}

// recheckDir writes a results folder for -recheck: the history, a clean
// final state and the windows.
func recheckDir(t *testing.T, h *hist, windows []Window) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteHistory(filepath.Join(dir, "history.jsonl"), h.ops); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"final.json": cleanFinal(), "windows.json": windows,
		"verdict.json": Verdict{Run: RunInfo{Started: "test"}}} {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func report(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "recheck", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A fault the nemesis could not inject makes the run invalid (exit 2),
// even though every checker passes, and the report names the fault.
func TestFaultNotInjectedMakesTheRunInvalid(t *testing.T) {
	h := cleanHistory()
	w := window(h, "pause", "n2,n3", func() { h.bootAs(8, "g", Info, 0) })
	w.Error = "SIGSTOP to n3: process is not running"
	r := CheckFaults(indexHistory(h.ops), []Window{w}, "")
	if r.Valid || len(r.Failed) != 1 || r.Failed[0].Window != 1 || !strings.Contains(r.Failed[0].Problem, "not injected: SIGSTOP to n3") {
		t.Fatalf("%+v", r)
	}
	dir := recheckDir(t, h, []Window{w})
	if code := realMain([]string{"-recheck", dir}); code != 2 {
		t.Fatalf("recheck exited %d, want 2", code)
	}
	rep := report(t, dir)
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
	h := cleanHistory()
	w := window(h, "partition-isolate-one", "{n1} | {n2,n3}", func() { h.bootAs(8, "g", Fail, 503) })
	w.HealError = "iptables -F JEPSEN-OUT: exit status 4"
	r := CheckFaults(indexHistory(h.ops), []Window{w}, "")
	if r.Valid || len(r.Failed) != 1 || !strings.Contains(r.Failed[0].Problem, "not healed: iptables -F") {
		t.Fatalf("%+v", r)
	}
	if r := CheckFaults(indexHistory(h.ops), nil, "resume n2: process is not running"); r.Valid {
		t.Fatalf("a failed final heal passed: %+v", r)
	}
	dir := recheckDir(t, h, []Window{w})
	if code := realMain([]string{"-recheck", dir}); code != 2 {
		t.Fatalf("recheck exited %d, want 2", code)
	}
	if rep := report(t, dir); !strings.Contains(rep, "NOT HEALED: iptables -F") {
		t.Errorf("the window table does not say the fault was not healed:\n%s", rep)
	}
}

// A window in which every operation succeeded quickly is reported as a
// warning; the run stays valid.
func TestUnfeltWindowIsAWarning(t *testing.T) {
	h := cleanHistory()
	w := window(h, "pause", "n4", func() {
		h.read(1, idB, "b", "ACTIVE", "")
		h.boot(8, "g", "gggg")
	})
	empty := window(h, "kill", "n5", func() {})
	h.read(1, idB, "b", "ACTIVE", "")
	r := CheckFaults(indexHistory(h.ops), []Window{w, empty}, "")
	if !r.Valid || len(r.Unfelt) != 2 {
		t.Fatalf("want two warnings on a valid run: %+v", r)
	}
	if !strings.Contains(r.Unfelt[0].Problem, "none of the 2 operations") || r.Unfelt[1].Problem != "no operation ran during it" {
		t.Fatalf("%+v", r.Unfelt)
	}
	fs := cleanFinal()
	fs.Servers = append(fs.Servers, ServerState{ID: "gggg", Name: "g", Status: "ACTIVE", Host: "n2", Node: nodeY})
	dir := recheckDir(t, h, []Window{w, empty})
	if err := writeJSON(filepath.Join(dir, "final.json"), fs); err != nil {
		t.Fatal(err)
	}
	realMain([]string{"-recheck", dir})
	rep := report(t, dir)
	for _, want := range []string{"## Warnings", "fault 1, pause n4: no operation saw an effect", "fault 2, kill n5: no operation ran during it"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}

// A window is felt by an operation that failed, ended with an unknown
// outcome, never ended, or was slow.
func TestFeltWindowIsNoWarning(t *testing.T) {
	slowRead := func(h *hist) {
		v := OpValue{ID: idB, Name: "b"}
		h.add(Op{Process: 1, Type: Invoke, F: FRead, Node: "n3", Consistency: Linearizable, Value: v})
		h.t += int64(2 * time.Second)
		v.Server = &ServerState{ID: idB, Name: "b", Status: "ACTIVE"}
		h.add(Op{Process: 1, Type: OK, F: FRead, Node: "n3", Consistency: Linearizable, Value: v, Code: 200})
	}
	for name, during := range map[string]func(*hist){
		"failed":     func(h *hist) { h.bootAs(8, "g", Fail, 503) },
		"unknown":    func(h *hist) { h.bootAs(8, "g", Info, 0) },
		"never ends": func(h *hist) { h.add(Op{Process: 8, Type: Invoke, F: FBoot, Node: "n1", Value: OpValue{Name: "g"}}) },
		"slow":       slowRead,
	} {
		h := cleanHistory()
		w := window(h, "pause", "n4", func() { during(h) })
		if r := CheckFaults(indexHistory(h.ops), []Window{w}, ""); !r.Valid || len(r.Unfelt) != 0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// A delete answered 404 is an answer, not an effect of the fault.
	h := cleanHistory()
	w := window(h, "pause", "n4", func() { h.del(2, idA, "a", Fail, 404) })
	if r := CheckFaults(indexHistory(h.ops), []Window{w}, ""); len(r.Unfelt) != 1 {
		t.Errorf("a 404 delete counted as felt: %+v", r)
	}
}

// A data race in an agent's log fails the run (exit 1) and is shown.
func TestDataRaceFailsTheRun(t *testing.T) {
	h := cleanHistory()
	races := map[string][]string{"n2": {"WARNING: DATA RACE\nWrite at 0x00c by goroutine 9:\n  corral/cluster.(*Node).f()\n"}}
	v := checkAll(h.ops, cleanFinal(), nil, nil, EffectLog{}, time.Second, "", "", races, "", RunInfo{Started: "test"}, 10*time.Second)
	if v.Valid || exitCode(v) != 1 {
		t.Fatalf("valid %v exit %d", v.Valid, exitCode(v))
	}
	dir := t.TempDir()
	if err := WriteReport(dir, v); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(b), "## Data races") || !strings.Contains(string(b), "(*Node).f()") {
		t.Fatalf("report:\n%s", b)
	}
}
