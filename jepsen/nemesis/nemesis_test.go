package nemesis

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/check"
	"github.com/corral-dev/corral/jepsen/cluster"
	"github.com/corral-dev/corral/jepsen/history"
)

// sleepers lays out a cluster whose "agents" are shell scripts that
// sleep: the nemesis's signals are real, corral is not needed.
func sleepers(t *testing.T) *cluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(bin, dir, dir, "token", "", "127.0.20.2", 3, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cl
}

func nemesisOn(t *testing.T, cl *cluster.Cluster, families ...string) *Nemesis {
	t.Helper()
	rec, err := history.NewRecorder(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	return &Nemesis{Cl: cl, Rec: rec, Rng: rand.New(rand.NewSource(1)), Families: families,
		Fault: 20 * time.Millisecond, Heal: 20 * time.Millisecond, Logf: t.Logf}
}

// A fault that hits a live cluster is injected and healed without error.
func TestNemesisInjectsAndHeals(t *testing.T) {
	cl := sleepers(t)
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	n := nemesisOn(t, cl, "pause")
	name, detail, heal, err := n.inject(context.Background(), "pause", "", nil)
	if err != nil {
		t.Fatalf("%s %s: %v", name, detail, err)
	}
	paused := 0
	for _, a := range cl.Agents {
		if a.Paused() {
			paused++
		}
	}
	if paused == 0 || paused != len(strings.Split(detail, ",")) {
		t.Fatalf("%d agents paused, the window says %q", paused, detail)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	for _, a := range cl.Agents {
		if a.Paused() || !a.Running() {
			t.Fatalf("%s paused %v running %v after the heal", a.Name, a.Paused(), a.Running())
		}
	}
}

// A fault that cannot happen (the agents are not running: the signals
// fail) is recorded as the window's error, which makes the run invalid.
func TestNemesisRecordsFaultsThatDidNotHappen(t *testing.T) {
	cl := sleepers(t) // never started
	for _, family := range []string{"kill", "pause", "restart", "wipe"} {
		n := nemesisOn(t, cl, family)
		_, _, _, err := n.inject(context.Background(), family, "", nil)
		if err == nil || !strings.Contains(err.Error(), "not running") {
			t.Errorf("%s of a stopped agent: error %v, want one saying it is not running", family, err)
		}
	}
	// Pause: its heal (SIGCONT) fails too, so the agents stay down and
	// every window of the run fails the same way.
	n := nemesisOn(t, cl, "pause")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.Run(ctx, 200*time.Millisecond)
	ws := n.Windows()
	if len(ws) == 0 {
		t.Fatal("no window recorded")
	}
	for _, w := range ws {
		if w.Error == "" || w.HealError == "" {
			t.Errorf("window %s %s: error %q, heal error %q", w.Name, w.Detail, w.Error, w.HealError)
		}
	}
	if r := check.Faults(history.NewIndex(nil), ws, ""); r.Valid || len(r.Failed) != 2*len(ws) {
		t.Fatalf("%+v", r)
	}
}

// With Aim, kills and pauses strike the agent it names, and the window
// says why; without an answer in time, the usual pick strikes.
func TestNemesisAimsAtTheNamedAgent(t *testing.T) {
	cl := sleepers(t)
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	for _, family := range []string{"kill", "pause"} {
		n := nemesisOn(t, cl, family)
		n.Aim = func(context.Context, time.Duration) (string, string) { return "n2", "owner of s1" }
		target, why := n.aim(context.Background(), family, "")
		if target == nil || target.Name != "n2" || why != "owner of s1" {
			t.Fatalf("%s: aimed at %v (%q)", family, target, why)
		}
		name, detail, heal, err := n.inject(context.Background(), family, "", target)
		if err != nil || detail != "n2" {
			t.Fatalf("%s: %s %q: %v", family, name, detail, err)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		if _, why := n.aim(context.Background(), "partition", "bridge"); why != "" {
			t.Fatalf("a bridge was aimed: %q", why)
		}
		n.Aim = func(context.Context, time.Duration) (string, string) { return "", "" }
		if target, why := n.aim(context.Background(), family, ""); target != nil || !strings.Contains(why, "random pick") {
			t.Fatalf("%s without an answer: %v %q", family, target, why)
		}
	}
}
