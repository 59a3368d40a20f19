package failover

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// TestBusyMachineBenchmark measures what a loaded machine does to a
// cluster with no fault: the raft elections, the leaderships gained or
// lost, the hosts taken down and the servers moved while every agent runs
// and the network is whole. Every one of them is false. It is not a timed
// test and runs only with CORRAL_BENCH=1; with CORRAL_RACE=1 the agents
// run the race build, as in CI:
//
//	CORRAL_BENCH=1 CORRAL_RACE=1 go test -v -count=1 -timeout 30m -run TestBusyMachineBenchmark ./e2e/failover/
//
// CORRAL_BENCH_HOSTS (default 3) sets the agents, CORRAL_BENCH_IDLE
// (default 2m) the window and CORRAL_BENCH_BUSY (default 2) the busy
// loops (`yes` into /dev/null) the benchmark runs meanwhile, beside
// whatever else loads the machine. CORRAL_BENCH_ENV, CORRAL_BENCH_B_ENV and
// CORRAL_BENCH_B_BIN are TestFailoverBenchmark's: a second cluster B runs
// beside A, under the same load.
//
// Besides the counts, it reports from the agents' logs the heartbeat
// timeouts (a follower that stopped hearing its leader: with pre-vote, an
// election only if the others no longer hear it either) and the lease
// step-downs (a leader that heard no majority for its lease).
func TestBusyMachineBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("benchmark: set CORRAL_BENCH=1 to run it")
	}
	o := benchOptionsFromEnv(t) // its A/B settings only
	hosts, busy, window := 3, 2, 2*time.Minute
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_HOSTS")); err == nil && v >= 3 {
		hosts = v
	}
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_BUSY")); err == nil && v >= 0 {
		busy = v
	}
	if v, err := time.ParseDuration(os.Getenv("CORRAL_BENCH_IDLE")); err == nil && v > 0 {
		window = v
	}
	type run struct {
		name, settings string
		f              *fixture
		before         busyCounts
		logs           map[*e2e.Agent]int64
	}
	var runs []*run
	for i, name := range []string{"A", "B"} {
		if name == "B" && !o.compare {
			break
		}
		bin, env := os.Getenv("CORRAL_BIN"), o.envA
		if name == "B" {
			bin, env = o.binB, o.envB
		}
		settings := "product defaults"
		if len(env) > 0 {
			settings = strings.Join(env, " ")
		}
		if bin != "" {
			settings += " (binary " + bin + ")"
		}
		f := startWith(t, startOptions{base: baseIP + 10*i, bin: bin, env: env}, hosts, 3*hosts,
			sim.Options{DeployDelay: 200 * time.Millisecond})
		ids := f.boot(3*hosts, "busy")
		f.waitServers(f.c.Agents[0], ids, 120*time.Second, fmt.Sprintf("%d servers ACTIVE", 3*hosts), active)
		runs = append(runs, &run{name: name, settings: settings, f: f})
	}
	for _, r := range runs {
		r.before = r.f.busyCounts(t)
		r.logs = map[*e2e.Agent]int64{}
		for _, a := range r.f.c.Agents {
			r.logs[a] = logSize(t, a)
		}
	}
	stop := startBusyLoops(t, busy)
	var loads []float64
	seen := make([]busySeen, len(runs))
	end := time.Now().Add(window)
	for time.Now().Before(end) {
		loads = append(loads, loadAverage())
		for i, r := range runs {
			seen[i].poll(r.f)
		}
		time.Sleep(250 * time.Millisecond) // pacing the poll: the window's length is what is measured
	}
	stop()
	lo, hi := 0.0, 0.0
	for i, l := range loads {
		if i == 0 || l < lo {
			lo = l
		}
		hi = max(hi, l)
	}
	for i, r := range runs {
		after := r.f.busyCounts(t)
		timeouts, stepDowns := 0, 0
		for a, off := range r.logs {
			l := readLog(t, a, off)
			timeouts += strings.Count(l, "heartbeat timeout reached")
			stepDowns += strings.Count(l, "failed to contact quorum of nodes, stepping down")
		}
		t.Logf("busy machine, cluster %s: %d hosts, %d ACTIVE servers, %s, no fault for %s, %d busy loops, 1-minute load average %.1f-%.1f",
			r.name, hosts, 3*hosts, r.settings, window, busy, lo, hi)
		t.Logf("%s: %d elections (raft term %d → %d), %d leader changes seen, %g leaderships gained or lost (summed over the peers), "+
			"%d heartbeat timeouts, %d lease step-downs, %g hosts committed down, %g servers reassigned, %g freezes, "+
			"hosts seen down %v, gossip members seen not alive %v (%d polls)",
			r.name, after.term-r.before.term, r.before.term, after.term, seen[i].leaderChanges,
			after.leaderships-r.before.leaderships, timeouts, stepDowns, after.downs-r.before.downs,
			after.reassigned-r.before.reassigned, after.freezes-r.before.freezes,
			keys(seen[i].down), keys(seen[i].notAlive), seen[i].polls)
	}
}

// startBusyLoops starts n busy loops and returns what stops them.
func startBusyLoops(t *testing.T, n int) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	}
	t.Cleanup(stop)
	for range n {
		c := exec.Command("yes") // its output goes to /dev/null
		if err := c.Start(); err != nil {
			t.Fatalf("start a busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
	return stop
}

// busyCounts are a cluster's counters, summed over its agents.
type busyCounts struct {
	term                                    uint64
	leaderships, downs, reassigned, freezes float64
}

func (f *fixture) busyCounts(t *testing.T) busyCounts {
	t.Helper()
	var c busyCounts
	for _, a := range f.c.Agents {
		c.term = max(c.term, f.term(a))
		c.leaderships += f.mustMetric(a, "corral_raft_leadership_changes_total")
		c.downs += f.mustMetric(a, "corral_failover_detect_seconds_count")
		c.reassigned += f.mustMetric(a, "corral_reassignments_total")
		c.freezes += f.mustMetric(a, "corral_failover_freezes_total")
	}
	return c
}

// busySeen is what the polls of a busy window saw.
type busySeen struct {
	leader        string
	leaderChanges int
	down          map[string]bool // hosts seen not up
	notAlive      map[string]bool // "peer→member status" seen in gossip
	polls         int
}

func (s *busySeen) poll(f *fixture) {
	if s.down == nil {
		s.down, s.notAlive = map[string]bool{}, map[string]bool{}
	}
	s.polls++
	var st struct {
		Leader string `json:"leader"`
	}
	if f.get(f.c.Agents[0], "/v1/cluster/raft", &st) == nil && st.Leader != "" {
		if s.leader != "" && st.Leader != s.leader {
			s.leaderChanges++
		}
		s.leader = st.Leader
	}
	if hs, err := f.hosts(f.c.Agents[0]); err == nil {
		for _, h := range hs {
			if h.Status != "up" {
				s.down[h.Name] = true
			}
		}
	}
	if s.polls%4 != 1 {
		return // gossip's views once a second
	}
	for _, a := range f.c.Agents {
		for _, b := range f.c.Agents {
			if st := f.memberStatus(a, b.Name); st != "alive" && st != "" {
				s.notAlive[a.Name+"→"+b.Name+" "+st] = true
			}
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
