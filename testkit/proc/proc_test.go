package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func sleeper(t *testing.T) *Proc {
	t.Helper()
	p := New(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "echo started; exec sleep 60"},
		LogPath: filepath.Join(t.TempDir(), "sleeper.log"),
		Banner:  func(n int) string { return "start " + strconv.Itoa(n) }})
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// waitLog polls the log until it shows n starts of the shell.
func waitLog(t *testing.T, p *Proc, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		log, err := Tail(p.LogPath, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(log, "started") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q: not %d starts", log, n)
		}
		time.Sleep(10 * time.Millisecond) // pacing the poll
	}
}

func TestLifecycle(t *testing.T) {
	p := sleeper(t)
	if err := p.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Kill before Start = %v, want ErrNotRunning", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, 1)
	if !p.Running() || p.Paused() {
		t.Fatalf("running %v paused %v after Start", p.Running(), p.Paused())
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if st, err := state(p.Pid()); err != nil || st != 'T' {
		t.Fatalf("state after Pause: %c %v", st, err)
	}
	if !p.Paused() {
		t.Fatal("not Paused after Pause")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("running after Kill")
	}
	if err := p.Pause(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Pause of a dead process = %v, want ErrNotRunning", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, 2)
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Starts() != 2 {
		t.Fatalf("%d starts", p.Starts())
	}
	log, err := Tail(p.LogPath, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(log, "started") != 2 || !strings.Contains(log, "start 2\n") {
		t.Fatalf("log %q", log)
	}
}

func TestDataRaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	log := `{"msg":"hello"}
==================
WARNING: DATA RACE
Write at 0x00c000 by goroutine 7:
  main.f()
==================
{"msg":"bye"}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	races, err := DataRaces(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(races) != 1 || !strings.Contains(races[0], "main.f()") || strings.Contains(races[0], "bye") {
		t.Fatalf("races %q", races)
	}
	if races, err := DataRaces(filepath.Join(t.TempDir(), "none.log")); err != nil || len(races) != 0 {
		t.Fatalf("missing log: %v %v", races, err)
	}
}

func TestRaceFromEnv(t *testing.T) {
	for _, c := range []struct {
		race, ci string
		want     bool
	}{{"", "", false}, {"", "true", true}, {"0", "true", false}, {"1", "", true}, {"true", "false", true}} {
		t.Setenv(RaceEnv, c.race)
		t.Setenv("CI", c.ci)
		if got := RaceFromEnv(); got != c.want {
			t.Errorf("CORRAL_RACE=%q CI=%q: %v, want %v", c.race, c.ci, got, c.want)
		}
	}
}

func TestStartInCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	cg, err := NewCgroups("corral-proc-test-"+strconv.Itoa(os.Getpid()), "sleeper")
	if err != nil {
		t.Skipf("no writable cgroup2 hierarchy: %v", err)
	}
	p := sleeper(t)
	p.Cgroup = cg.Dir("sleeper")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "0::/"+cg.Rel("sleeper")+"\n") {
		t.Fatalf("process cgroups:\n%s\nwant 0::/%s", b, cg.Rel("sleeper"))
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cg.Remove(); err != nil {
		t.Fatal(err)
	}
}
