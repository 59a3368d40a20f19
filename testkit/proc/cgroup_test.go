package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeCgroup2 lays out dir as a cgroup2 mount whose root offers
// controllers and passes rootPasses on, with the groups of name and procs
// as the kernel shows them once cpu is enabled for them.
func fakeCgroup2(t *testing.T, controllers, rootPasses, name string, procs ...string) *Cgroups {
	t.Helper()
	mount := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(mount, "cgroup.controllers"), controllers+"\n")
	write(filepath.Join(mount, "cgroup.subtree_control"), rootPasses+"\n")
	c, err := newCgroupsIn(mount, name, procs...)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(c.Root, "cgroup.subtree_control"), "\n")
	for _, p := range procs {
		write(filepath.Join(c.Dir(p), "cpu.max"), "max 100000\n")
	}
	return c
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLimitCPUWritesCgroup2Files(t *testing.T) {
	c := fakeCgroup2(t, "cpuset cpu io memory pids", "memory pids", "corral-x", "peer1", "peer2")
	lift, err := c.LimitCPU("peer1", 5)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel would read back "cpu memory pids"; the fake keeps what was written.
	for dir, want := range map[string]string{c.Mount: "+cpu", c.Root: "+cpu"} {
		if got := readFile(t, filepath.Join(dir, "cgroup.subtree_control")); got != want {
			t.Errorf("%s/cgroup.subtree_control = %q, want %q", dir, got, want)
		}
	}
	if got := readFile(t, filepath.Join(c.Dir("peer1"), "cpu.max")); got != "5000 100000" {
		t.Errorf("peer1 cpu.max = %q, want the quota of 5%% of a 100 ms period", got)
	}
	if got := readFile(t, filepath.Join(c.Dir("peer2"), "cpu.max")); got != "max 100000\n" {
		t.Errorf("peer2 cpu.max = %q: only peer1 is limited", got)
	}
	if err := lift(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(c.Dir("peer1"), "cpu.max")); got != "max 100000" {
		t.Errorf("peer1 cpu.max after lift = %q, want no limit", got)
	}
}

func TestEnableCPUSkipsGroupsThatPassItOn(t *testing.T) {
	c := fakeCgroup2(t, "cpu memory", "cpu memory", "corral-x", "peer1")
	enabled, err := c.EnableCPU()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(c.Root, "cgroup.subtree_control")}; !slices.Equal(enabled, want) {
		t.Fatalf("enabled in %v, want only %v", enabled, want)
	}
	if got := readFile(t, filepath.Join(c.Mount, "cgroup.subtree_control")); got != "cpu memory\n" {
		t.Errorf("the root's subtree_control was rewritten: %q", got)
	}
}

func TestLimitCPURefusals(t *testing.T) {
	t.Run("no cpu controller in cgroup2", func(t *testing.T) {
		c := fakeCgroup2(t, "hugetlb", "", "corral-x", "peer1")
		_, err := c.LimitCPU("peer1", 5)
		if err == nil || !strings.Contains(err.Error(), "no cpu controller") {
			t.Fatalf("got %v, want a refusal naming the missing cpu controller", err)
		}
		if got := readFile(t, filepath.Join(c.Mount, "cgroup.subtree_control")); got != "\n" {
			t.Errorf("wrote %q to the root's subtree_control", got)
		}
	})
	t.Run("cpu.max missing", func(t *testing.T) {
		c := fakeCgroup2(t, "cpu", "cpu", "corral-x", "peer1")
		if err := os.Remove(filepath.Join(c.Dir("peer1"), "cpu.max")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.LimitCPU("peer1", 5); err == nil {
			t.Fatal("limited a group that has no cpu.max")
		}
		if _, err := os.Stat(filepath.Join(c.Dir("peer1"), "cpu.max")); !os.IsNotExist(err) {
			t.Errorf("cpu.max was created as a regular file: %v", err)
		}
	})
	t.Run("share out of range", func(t *testing.T) {
		c := fakeCgroup2(t, "cpu", "cpu", "corral-x", "peer1")
		for _, pct := range []int{0, 101} {
			if _, err := c.LimitCPU("peer1", pct); err == nil {
				t.Errorf("accepted %d%%", pct)
			}
		}
	})
}

// TestLimitCPUOfARealGroup runs LimitCPU against this machine's cgroup2
// hierarchy, with a process in the group, where that hierarchy has the
// cpu controller (a cgroup v2 machine; on a machine where cpu is bound to
// cgroup v1 the failover tests use that instead).
func TestLimitCPUOfARealGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	mount := Cgroup2Mount()
	if mount == "" {
		t.Skip("no cgroup2 hierarchy is mounted")
	}
	if avail, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers")); !slices.Contains(strings.Fields(string(avail)), "cpu") {
		t.Skipf("the cgroup2 hierarchy at %s has no cpu controller (it has %q): cgroup v1 holds it here", mount, strings.TrimSpace(string(avail)))
	}
	cg, err := NewCgroups("corral-cpu-test-"+strconv.Itoa(os.Getpid()), "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	p := sleeper(t)
	p.Cgroup = cg.Dir("sleeper")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	lift, err := cg.LimitCPU("sleeper", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(cg.Dir("sleeper"), "cpu.max"))); got != "5000 100000" {
		t.Errorf("cpu.max = %q, want 5000 100000", got)
	}
	if stat := readFile(t, filepath.Join(cg.Dir("sleeper"), "cpu.stat")); !strings.Contains(stat, "nr_throttled") {
		t.Errorf("cpu.stat counts no throttling:\n%s", stat)
	}
	if err := lift(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(cg.Dir("sleeper"), "cpu.max"))); got != "max 100000" {
		t.Errorf("cpu.max after lift = %q, want max 100000", got)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cg.Remove(); err != nil {
		t.Fatal(err)
	}
}
