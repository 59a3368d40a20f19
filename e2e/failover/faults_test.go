package failover

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
)

// lossy drops the share p of the packets every agent sends to every other
// agent's address (iptables' statistic match, see testkit/netem); heal
// removes it. Gossip's UDP is bound to the agents' addresses, so it loses
// packets both ways; a TCP connection loses them in the direction of its
// dialer's requests (the answers go to 127.0.0.1, which no rule touches).
func (is *isolation) lossy(agents []*e2e.Agent, p float64) {
	is.t.Helper()
	for _, a := range agents {
		for _, b := range agents {
			if a == b {
				continue
			}
			if err := is.fw.Drop(a.NetHost(), b.NetHost(), p); err != nil {
				is.t.Fatal(err)
			}
		}
	}
}

// starvation holds one agent's processes to a small share of one CPU, a
// CFS quota of every 100 ms period: the host is alive and answers
// everything, slowly, as a host whose CPU is taken by other tenants or a
// runaway process. Under cgroup v2 the quota is set on the agent's own
// group (cpu.max); under cgroup v1 its processes move into a cpu group of
// their own (cpu.cfs_quota_us) and back at the end.
type starvation struct {
	stat string       // the cpu.stat that counts the throttled periods
	lift func() error // ends it
	once sync.Once
	err  error
}

// errNoCPUCgroup: the machine offers no way to limit an agent's CPU.
var errNoCPUCgroup = errors.New("CPU starvation needs the cpu controller: in the cgroup2 hierarchy (cpu.max) or a writable cgroup v1 cpu hierarchy (cpu.cfs_quota_us)")

// canStarve checks, before the agents start, that their CPU can be
// limited: cgroup v2's cpu controller enabled for the agents' groups, or
// else a cgroup v1 cpu hierarchy where a group can be created.
func (is *isolation) canStarve() error {
	enabled, err2 := is.cg.EnableCPU()
	if err2 == nil {
		for _, ctl := range enabled {
			is.t.Logf("CPU starvation: enabled the cpu controller in %s (cgroup v2)", ctl)
		}
		return nil
	}
	mnt, err1 := cpuMount()
	if err1 == nil {
		probe := filepath.Join(mnt, fmt.Sprintf("corral-starve-probe-%d", os.Getpid()))
		if err1 = os.Mkdir(probe, 0o755); err1 == nil {
			err1 = os.Remove(probe)
		}
	}
	if err1 != nil {
		return fmt.Errorf("%w: cgroup v2: %v; cgroup v1: %v", errNoCPUCgroup, err2, err1)
	}
	is.t.Logf("CPU starvation: cgroup v1 cpu hierarchy at %s (cgroup v2: %v)", mnt, err2)
	return nil
}

// needStarvation fails the test when the agents' CPU cannot be limited
// where it should be (as root, or in CI), and skips it saying why
// elsewhere.
func needStarvation(t *testing.T, is *isolation) {
	t.Helper()
	err := is.canStarve()
	switch {
	case err == nil:
	case os.Geteuid() == 0 || os.Getenv("CI") == "true":
		t.Fatalf("%v: this test must run here (root or CI); give the machine one of them", err)
	default:
		t.Skipf("NOT RUN: %v (run as root)", err)
	}
}

// cpuMount returns where the cgroup v1 cpu controller is mounted.
func cpuMount() (string, error) {
	fh, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[2] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(f[3], ",") {
			if o == "cpu" {
				return f[1], nil
			}
		}
	}
	return "", errors.New("no cgroup v1 hierarchy has the cpu controller")
}

// cpuCgroupOf returns the cgroup v1 cpu group of pid, relative to the mount.
func cpuCgroupOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("pid %d: no cpu cgroup in /proc/%d/cgroup", pid, pid)
}

// agentPids lists the processes of agent a (its cgroup2 group of is).
func (is *isolation) agentPids(a *e2e.Agent) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(is.cg.Dir(a.Name), "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs of %s: %w", a.Name, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("%s has no process in its cgroup", a.Name)
	}
	return pids, nil
}

// starve limits agent a to percent % of one CPU until the returned
// starvation is ended (also at the test's cleanup, even on failure):
// through cgroup v2 when it can, else through cgroup v1.
func (is *isolation) starve(a *e2e.Agent, percent int) (*starvation, error) {
	is.t.Helper()
	s := &starvation{}
	is.t.Cleanup(func() {
		if err := s.end(); err != nil {
			is.t.Errorf("end the CPU starvation of %s: %v", a.Name, err)
		}
	})
	lift, err2 := is.cg.LimitCPU(a.Name, percent)
	if err2 == nil {
		s.stat, s.lift = filepath.Join(is.cg.Dir(a.Name), "cpu.stat"), lift
		return s, nil
	}
	if err1 := is.starveV1(s, a, percent); err1 != nil {
		return s, fmt.Errorf("%w: cgroup v2: %v; cgroup v1: %v", errNoCPUCgroup, err2, err1)
	}
	return s, nil
}

// starveV1 moves a's processes into a cgroup v1 cpu group of their own
// with a CFS quota; s.lift moves them back and removes the group.
func (is *isolation) starveV1(s *starvation, a *e2e.Agent, percent int) error {
	mnt, err := cpuMount()
	if err != nil {
		return err
	}
	pids, err := is.agentPids(a)
	if err != nil {
		return err
	}
	dir := filepath.Join(mnt, fmt.Sprintf("corral-starve-%d-%s", os.Getpid(), a.Name))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	orig := map[int]string{} // pid → its cpu group before (absolute)
	s.stat, s.lift = filepath.Join(dir, "cpu.stat"), func() error { return endV1(dir, orig) }
	const period = 100000 // µs
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(period*percent/100)), 0); err != nil {
		return err
	}
	for _, pid := range pids {
		rel, err := cpuCgroupOf(pid)
		if err != nil {
			return err
		}
		orig[pid] = filepath.Join(mnt, rel)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move pid %d into %s: %w", pid, dir, err)
		}
	}
	return nil
}

// throttled reports how many CFS periods the group ran in and how many of
// them it was throttled in, from cpu.stat (the same keys in v1 and v2).
func (s *starvation) throttled() (periods, throttled int) {
	b, err := os.ReadFile(s.stat)
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "nr_periods":
			periods = v
		case "nr_throttled":
			throttled = v
		}
	}
	return periods, throttled
}

// end lifts the starvation, once.
func (s *starvation) end() error {
	s.once.Do(func() {
		if s.lift != nil {
			s.err = s.lift()
		}
	})
	return s.err
}

// endV1 moves the processes back where they were and removes the group; a
// process that has exited meanwhile is no error.
func endV1(dir string, orig map[int]string) error {
	var errs []error
	for pid, o := range orig {
		err := os.WriteFile(filepath.Join(o, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such process") {
			errs = append(errs, fmt.Errorf("move pid %d back to %s: %w", pid, o, err))
		}
	}
	// The group can be removed once the kernel has let go of its tasks.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
			break
		}
		time.Sleep(50 * time.Millisecond) // pacing the retry
	}
	return errors.Join(errs...)
}

// watch is what a window of faults without a death did to the cluster.
type watch struct {
	moved     int             // servers whose owner changed: false reassignments
	downSeen  map[string]bool // hosts seen not up at some poll
	elections int             // raft elections (term changes) over the window
	polls     int
}

// watchWindow polls obs every interval for d and counts the servers that
// changed owner (against the owners at the start), the hosts seen not up
// and the raft elections (obs's term at the end less at the start). Every
// host is alive throughout: any move is a false reassignment, any
// election a false one.
func (f *fixture) watchWindow(obs *e2e.Agent, d time.Duration) watch {
	f.t.Helper()
	before, err := f.servers(obs)
	if err != nil {
		f.t.Fatalf("servers before the window: %v", err)
	}
	term0 := f.term(obs)
	w := watch{downSeen: map[string]bool{}}
	moved := map[string]bool{}
	end := time.Now().Add(d)
	for {
		if hs, err := f.hosts(obs); err == nil {
			for _, h := range hs {
				if h.Status != "up" {
					w.downSeen[h.Name] = true
				}
			}
		}
		if srv, err := f.servers(obs); err == nil {
			for id, s := range before {
				if now, ok := srv[id]; ok && now.Host != s.Host {
					moved[id] = true
				}
			}
		}
		w.polls++
		if time.Now().After(end) {
			break
		}
		time.Sleep(500 * time.Millisecond) // pacing the poll: the window's length is what is measured
	}
	w.moved = len(moved)
	if term := f.term(obs); term0 > 0 && term > term0 {
		w.elections = int(term - term0)
	}
	return w
}

func (w watch) String() string {
	var down []string
	for h := range w.downSeen {
		down = append(down, h)
	}
	return fmt.Sprintf("%d servers moved, hosts seen down: %v, %d elections (%d polls)", w.moved, down, w.elections, w.polls)
}

// keeps reports whether every server of srv owned by host is still owned
// by it on obs.
func (f *fixture) keeps(obs *e2e.Agent, srv map[string]server, host string) error {
	now, err := f.servers(obs)
	if err != nil {
		return err
	}
	for id := range ownedBy(srv, host) {
		if now[id].Host != host {
			return fmt.Errorf("server %s of %s is now on %q", id, host, now[id].Host)
		}
	}
	return nil
}

// starveFor starves a for d at percent % of one CPU, watching the cluster
// through obs; it returns what the window did and the throttling seen.
func (f *fixture) starveFor(t testing.TB, is *isolation, a, obs *e2e.Agent, percent int, d time.Duration) (watch, string) {
	t.Helper()
	s, err := is.starve(a, percent)
	if err != nil {
		_ = s.end()
		t.Fatalf("starve %s: %v", a.Name, err)
	}
	w := f.watchWindow(obs, d)
	periods, thr := s.throttled()
	if err := s.end(); err != nil {
		t.Fatalf("end the starvation of %s: %v", a.Name, err)
	}
	return w, fmt.Sprintf("throttled in %d of %d CFS periods", thr, periods)
}
