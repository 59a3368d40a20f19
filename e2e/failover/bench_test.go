package failover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// TestFailoverBenchmark measures failover on real processes; it is not a
// timed test and runs only with CORRAL_BENCH=1 (make bench-failover; its
// p99s and false reassignments are rows of make bench's table,
// testkit/benchrow):
//
//	CORRAL_BENCH=1 go test -v -count=1 -timeout 60m -run TestFailoverBenchmark ./e2e/failover/
//
// CORRAL_BENCH_RUNS (default 10) sets the runs of each fault, CORRAL_BENCH_QUIET
// (default 30s) the no-fault window, and CORRAL_BENCH_ENV a comma-separated
// list of KEY=VALUE settings for every agent (e.g. to try tuned timings);
// without it the agents run with the product defaults. CORRAL_BENCH_ONLY
// (a comma-separated list of kill, leader, stop, pause, partition, loss,
// starve; default all) picks the rows.
//
// CORRAL_BENCH_LOSS_QUIET (default 60s) sets the quiet window under 5 %
// packet loss, CORRAL_BENCH_STARVE (default 30s) how long one peer is
// CPU-starved and CORRAL_BENCH_STARVE_PERCENT (default 5; a comma-separated
// list runs each in turn) the share of one CPU it gets meanwhile.
//
// CORRAL_BENCH_SIZE=small (make bench): 3 runs of each fault, quiet
// windows of 5 s and (under loss) 10 s, 10 s of starvation, no leader
// SIGTERM and no host kills under loss; the variables above still
// override it.
//
// Same-run comparison: CORRAL_BENCH_B_ENV and/or CORRAL_BENCH_B_BIN start a
// second cluster B (other addresses) beside A, with those settings and that
// binary (A runs CORRAL_BIN, or the tree's own build, with CORRAL_BENCH_ENV).
// Both run side by side on the same machine, and every fault alternates
// between them, run by run, so that both see the same load.
//
// On each cluster of five hosts with 30 ACTIVE servers it measures:
//   - no fault for the quiet window: reassignments must stay 0;
//   - host kill: SIGKILL a non-leader host, time until every one of its
//     servers is owned by a live host (API polled every 20 ms), with the
//     time gossip on the leader reported it dead and the time it was
//     marked down; the host is restarted between runs;
//   - leader kill: SIGKILL the leader, time until a write (a flavor create
//     through a survivor, a new attempt every 20 ms) is committed, with the
//     time a survivor first reports another leader;
//   - leader stop: the same after SIGTERM (a graceful stop);
//   - host pause: SIGSTOP a non-leader host, times as for a kill; SIGCONT,
//     then it must come back up;
//   - host partition (root, iptables and cgroup2 needed): cut a non-leader
//     host off from its peers, times as for a kill; healed, it comes back;
//   - with 5 % of the packets between peers dropped (same needs): false
//     reassignments and elections over the quiet window, then host kills
//     as above;
//   - one peer CPU-starved (a CFS quota: cgroup v2's cpu.max, else a
//     cgroup v1 cpu group; without either these rows are skipped), a
//     follower then the leader: false reassignments, elections and whether
//     its own servers stayed.
func TestFailoverBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("benchmark: set CORRAL_BENCH=1 to run it")
	}
	o := benchOptionsFromEnv(t)
	clusters := o.start(t)

	// No fault.
	end := time.Now().Add(o.quiet)
	terms := map[*benchCluster]uint64{}
	for _, c := range clusters {
		terms[c] = c.f.term(c.f.c.Agents[0])
	}
	for time.Now().Before(end) {
		for _, c := range clusters {
			if err := c.f.calm(); err != nil {
				t.Fatalf("%s: no-fault window: %v", c.name, err)
			}
		}
		time.Sleep(time.Second) // the quiet period is what is measured
	}
	for _, c := range clusters {
		if err := c.f.calm(); err != nil {
			t.Fatalf("%s: no-fault window: %v", c.name, err)
		}
		c.line(fmt.Sprintf("no fault for %s: 0 reassignments, 0 freezes, every host up, %d elections", o.quiet,
			c.f.term(c.f.c.Agents[0])-terms[c]))
	}

	faults := []struct {
		row string
		run func(c *benchCluster, i int)
	}{
		{"kill", func(c *benchCluster, i int) {
			g, d, r := c.f.benchHostKill(t)
			c.add("host kill: gossip on the leader says dead", g)
			c.add("host kill: host marked down (HostDown)", d)
			c.add("host kill: all its servers re-owned", r)
		}},
		{"leader", func(c *benchCluster, i int) {
			e, w := c.f.benchLeaderLoss(t, i, "kill")
			c.add("leader kill: a survivor reports a new leader", e)
			c.add("leader kill: next write committed", w)
		}},
		{"stop", func(c *benchCluster, i int) {
			e, w := c.f.benchLeaderLoss(t, i, "stop")
			c.add("leader stop (SIGTERM): a survivor reports a new leader", e)
			c.add("leader stop (SIGTERM): next write committed", w)
		}},
		{"pause", func(c *benchCluster, i int) {
			g, d, r := c.f.benchHostPause(t)
			c.add("host pause: gossip on the leader says dead", g)
			c.add("host pause: host marked down (HostDown)", d)
			c.add("host pause: all its servers re-owned", r)
		}},
		{"partition", func(c *benchCluster, i int) {
			if c.is == nil {
				return
			}
			g, d, r := c.f.benchHostPartition(t, c.is)
			c.add("host partition: gossip on the leader says dead", g)
			c.add("host partition: host marked down (HostDown)", d)
			c.add("host partition: all its servers re-owned", r)
		}},
	}
	for _, fault := range faults {
		if !o.rows[fault.row] {
			continue
		}
		for i := range o.runs {
			for _, c := range clusters {
				c.load()
				fault.run(c, i)
				t.Logf("%s: %s %d/%d: %s", c.name, fault.row, i+1, o.runs, c.last())
			}
		}
	}
	for _, c := range clusters {
		switch {
		case !o.rows["loss"] && !o.rows["starve"]:
		case c.is == nil:
			c.line(fmt.Sprintf("partition, loss and starvation rows skipped: %v", c.isErr))
		default:
			c.benchFaults(t, o)
		}
	}
	for _, c := range clusters {
		c.report(t, o)
	}
	clusters[0].emitRows(t, o) // make bench's rows: cluster A's
}

// benchOptions are the benchmark's settings (see TestFailoverBenchmark).
type benchOptions struct {
	runs                        int
	lossRuns                    int // host kills under loss
	quiet, lossQuiet, starveFor time.Duration
	starvePct                   []int
	rows                        map[string]bool
	envA, envB                  []string
	binB                        string
	compare                     bool
	size                        string // CORRAL_BENCH_SIZE
}

func benchOptionsFromEnv(t *testing.T) benchOptions {
	o := benchOptions{runs: 10, quiet: 30 * time.Second, lossQuiet: 60 * time.Second, starveFor: 30 * time.Second,
		rows: map[string]bool{}, size: benchrow.Size(t)}
	if o.size == benchrow.Small {
		o.runs, o.quiet, o.lossQuiet, o.starveFor = 3, 5*time.Second, 10*time.Second, 10*time.Second
	}
	o.lossRuns = o.runs
	if o.size == benchrow.Small {
		o.lossRuns = 0 // the kills under loss have no goal of make bench's
	}
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_RUNS")); err == nil && v > 0 {
		o.runs = v
	}
	dur := func(key string, d *time.Duration) {
		if v, err := time.ParseDuration(os.Getenv(key)); err == nil && v > 0 {
			*d = v
		}
	}
	dur("CORRAL_BENCH_QUIET", &o.quiet)
	dur("CORRAL_BENCH_LOSS_QUIET", &o.lossQuiet)
	dur("CORRAL_BENCH_STARVE", &o.starveFor)
	for _, p := range strings.Split(os.Getenv("CORRAL_BENCH_STARVE_PERCENT"), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && v > 0 && v <= 100 {
			o.starvePct = append(o.starvePct, v)
		}
	}
	if len(o.starvePct) == 0 {
		o.starvePct = []int{5}
	}
	for _, r := range list(os.Getenv("CORRAL_BENCH_ONLY")) {
		o.rows[r] = true
	}
	if len(o.rows) == 0 {
		for _, r := range []string{"kill", "leader", "stop", "pause", "partition", "loss", "starve"} {
			o.rows[r] = o.size != benchrow.Small || r != "stop" // the leader's SIGTERM has no goal of make bench's
		}
	}
	o.envA, o.envB = list(os.Getenv("CORRAL_BENCH_ENV")), list(os.Getenv("CORRAL_BENCH_B_ENV"))
	o.binB = os.Getenv("CORRAL_BENCH_B_BIN")
	o.compare = o.binB != "" || len(o.envB) > 0
	return o
}

func list(s string) []string {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

// benchCluster is one cluster of a benchmark run and what was measured on it.
type benchCluster struct {
	name, settings string
	f              *fixture
	is             *isolation // nil: no partition, loss or starvation rows
	isErr          error
	order          []string
	samples        map[string][]time.Duration
	loads          []float64 // the 1-minute load average before each run
	lines          []string
	lastRow        string
	// moved counts the servers moved in the windows without a death, by
	// make bench row (loss-, starve-false-reassignments); skipped says
	// why a row could not be measured.
	moved   map[string]int
	skipped map[string]string
}

func (c *benchCluster) add(row string, d time.Duration) {
	if _, ok := c.samples[row]; !ok {
		c.order = append(c.order, row)
	}
	c.samples[row] = append(c.samples[row], d)
	c.lastRow = row
}

// last describes the latest sample of each measure of the latest fault.
func (c *benchCluster) last() string {
	var parts []string
	prefix := c.lastRow[:strings.Index(c.lastRow, ":")+1]
	for _, row := range c.order {
		if strings.HasPrefix(row, prefix) {
			s := c.samples[row]
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(row, prefix))+" "+ms(s[len(s)-1]))
		}
	}
	return strings.Join(parts, ", ")
}

func (c *benchCluster) line(s string) { c.lines = append(c.lines, s) }

func (c *benchCluster) load() { c.loads = append(c.loads, loadAverage()) }

// loadAverage is the machine's 1-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// start starts cluster A, and B beside it for a comparison.
func (o benchOptions) start(t *testing.T) []*benchCluster {
	t.Helper()
	settings := func(bin string, env []string) string {
		s := "product defaults"
		if len(env) > 0 {
			s = strings.Join(env, " ")
		}
		if bin != "" {
			s += " (binary " + bin + ")"
		}
		return s
	}
	names := []string{"A"}
	if o.compare {
		names = append(names, "B")
	}
	var out []*benchCluster
	for i, name := range names {
		bin, env := os.Getenv("CORRAL_BIN"), o.envA
		if name == "B" {
			bin, env = o.binB, o.envB
		}
		c := &benchCluster{name: name, settings: settings(bin, env), samples: map[string][]time.Duration{},
			moved: map[string]int{}, skipped: map[string]string{}}
		var cgName string
		if o.compare {
			cgName = name
		}
		needIsolation := o.rows["partition"] || o.rows["loss"] || o.rows["starve"]
		if needIsolation {
			c.is, c.isErr = tryIsolationNamed(t, 5, cgName)
			if c.isErr != nil && !errors.Is(c.isErr, errNoIsolation) {
				t.Fatal(c.isErr)
			}
		}
		so := startOptions{base: baseIP + 10*i, bin: bin, env: env}
		if c.is != nil {
			so.cg = c.is.cg
		}
		c.f = startWith(t, so, 5, 60, sim.Options{DeployDelay: 200 * time.Millisecond})
		ids := c.f.boot(30, "bench")
		c.f.waitServers(c.f.c.Agents[0], ids, 120*time.Second, "30 servers ACTIVE", active)
		out = append(out, c)
	}
	return out
}

// report logs the cluster's table.
func (c *benchCluster) report(t *testing.T, o benchOptions) {
	t.Helper()
	lo, hi := 0.0, 0.0
	if len(c.loads) > 0 {
		lo, hi = slices.Min(c.loads), slices.Max(c.loads)
	}
	t.Logf("failover benchmark, cluster %s: 5 hosts, 30 ACTIVE servers, %d runs per fault, %s; 1-minute load average %.1f-%.1f",
		c.name, o.runs, c.settings, lo, hi)
	t.Logf("| %-56s | %8s | %8s | %8s |", "measure (from the fault)", "p50", "p99", "max")
	t.Logf("|%s|%s|%s|%s|", strings.Repeat("-", 58), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10))
	for _, row := range c.order {
		p50, p99, worst := summary(c.samples[row])
		t.Logf("| %-56s | %8s | %8s | %8s |", row, ms(p50), ms(p99), ms(worst))
	}
	for _, l := range c.lines {
		t.Logf("%s: %s", c.name, l)
	}
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// term is the raft term a reports (0 when it does not answer).
func (f *fixture) term(a *e2e.Agent) uint64 {
	ctx, cancel := ctx10()
	defer cancel()
	st, err := a.Raft(ctx)
	if err != nil {
		return 0
	}
	return st.Term
}

// benchHostKill kills the non-leader host owning the most servers, times
// gossip death (on the leader), HostDown and re-ownership, then restarts it.
func (f *fixture) benchHostKill(t *testing.T) (gossipDead, down, reowned time.Duration) {
	t.Helper()
	leader := f.c.Leader(10 * time.Second)
	victim, lost, obs := f.pick(leader)
	killed := time.Now()
	victim.Kill()
	gossipDead, down, reowned = f.timeLoss(leader, victim, obs, lost, killed)
	f.restart(t, victim)
	return gossipDead, down, reowned
}

// pick returns the non-leader host owning the most servers, its servers
// and another peer to watch them through.
func (f *fixture) pick(leader *e2e.Agent) (victim *e2e.Agent, lost map[string]string, obs *e2e.Agent) {
	f.t.Helper()
	// A peer just healed of the previous fault may not know the leader
	// yet (its reads answer 503 until it does): the read is retried.
	var srv map[string]server
	f.poll("servers read before the fault", 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		srv, err = f.servers(f.other(leader))
		return err
	})
	victim = f.victim(srv, leader)
	return victim, ownedBy(srv, victim.Name), f.other(leader, victim)
}

// timeLoss polls until every server of lost has left victim and times,
// from since, gossip on the leader saying it is dead, its HostDown and the
// re-ownership.
func (f *fixture) timeLoss(leader, victim, obs *e2e.Agent, lost map[string]string, since time.Time) (gossipDead, down, reowned time.Duration) {
	f.t.Helper()
	f.poll("servers re-owned", 60*time.Second, 20*time.Millisecond, func() error {
		if gossipDead == 0 && f.memberStatus(leader, victim.Name) == "dead" {
			gossipDead = time.Since(since)
		}
		if down == 0 {
			if hs, err := f.hosts(leader); err == nil && hs[victim.Name].Status == "down" {
				down = time.Since(since)
			}
		}
		srv, err := f.servers(obs)
		if err != nil {
			return err
		}
		for id := range lost {
			if s := srv[id]; s.Host == victim.Name || s.Host == "" {
				return fmt.Errorf("server %s still on %s", id, victim.Name)
			}
		}
		return nil
	})
	reowned = time.Since(since)
	if down == 0 {
		down = reowned
	}
	if gossipDead == 0 {
		// The servers may move before gossip notices (on the refused
		// connections of the killed process): time gossip on its own.
		f.poll("gossip on the leader says dead", 30*time.Second, 20*time.Millisecond, func() error {
			if st := f.memberStatus(leader, victim.Name); st != "dead" {
				return fmt.Errorf("%s is %q", victim.Name, st)
			}
			return nil
		})
		gossipDead = time.Since(since)
	}
	return gossipDead, down, reowned
}

// benchLeaderLoss kills (how "kill") or stops (SIGTERM, how "stop") the
// leader and times a new leader and the first committed write through the
// survivors, then restarts it.
func (f *fixture) benchLeaderLoss(t *testing.T, run int, how string) (elected, write time.Duration) {
	t.Helper()
	leader := f.c.Leader(10 * time.Second)
	var survivors []*e2e.Agent
	for _, a := range f.running() {
		if a != leader {
			survivors = append(survivors, a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan struct{})
	var once sync.Once
	lost := time.Now()
	stopped := make(chan struct{})
	if how == "stop" {
		// The stop takes a while (the agent drains its API, then raft):
		// writes are tried meanwhile.
		go func() { defer close(stopped); leader.Stop(30 * time.Second) }()
	} else {
		leader.Kill()
		close(stopped)
	}
	sem := make(chan struct{}, 50) // bounded attempts in flight
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for attempt := 0; ; attempt++ {
		if elected == 0 {
			for _, a := range survivors {
				var st struct {
					State  string `json:"state"`
					Leader string `json:"leader"`
				}
				if f.get(a, "/v1/cluster/raft", &st) == nil && st.Leader != "" && st.Leader != leader.Name {
					elected = time.Since(lost)
					break
				}
			}
		}
		select {
		case <-done:
			wg.Wait()
			<-stopped
			f.restart(t, leader)
			if elected == 0 || elected > write {
				elected = write
			}
			return elected, write
		case <-ctx.Done():
			t.Fatalf("no write committed within 60s of the leader's %s", how)
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue
		}
		a := survivors[attempt%len(survivors)]
		id := fmt.Sprintf("bench-%s-%d-%d", how, run, attempt)
		wg.Go(func() {
			defer func() { <-sem }()
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			defer acancel()
			err := a.Client().Do(actx, http.MethodPost, "/compute/v2.1/flavors", map[string]any{"flavor": map[string]any{
				"name": id, "id": id, "vcpus": 1, "ram": 1, "disk": 1}}, nil)
			if err == nil {
				once.Do(func() {
					write = time.Since(lost) // read after done is closed
					close(done)
				})
			}
		})
	}
}

// memberStatus is host's gossip status as a sees it.
func (f *fixture) memberStatus(a *e2e.Agent, host string) string {
	var body struct {
		Members []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"members"`
	}
	if f.get(a, "/v1/cluster/members", &body) != nil {
		return ""
	}
	for _, m := range body.Members {
		if m.Name == host {
			return m.Status
		}
	}
	return ""
}

// restart starts a killed agent again and waits until every peer is ready,
// it is up and every peer's gossip sees every member alive.
func (f *fixture) restart(t *testing.T, a *e2e.Agent) {
	t.Helper()
	a.Start()
	f.settle(t, a)
}

// settle waits until every running peer is ready, every host is up and
// every peer's gossip sees every member alive.
func (f *fixture) settle(t *testing.T, a *e2e.Agent) {
	t.Helper()
	f.c.AwaitReady(60 * time.Second)
	f.poll(a.Name+" up and alive everywhere", 90*time.Second, 100*time.Millisecond, func() error {
		hs, err := f.hosts(f.other(a))
		if err != nil {
			return err
		}
		for _, h := range hs {
			if h.Status != "up" {
				return fmt.Errorf("host %s is %s", h.Name, h.Status)
			}
		}
		for _, x := range f.c.Agents {
			for _, y := range f.c.Agents {
				if st := f.memberStatus(x, y.Name); st != "alive" {
					return fmt.Errorf("%s sees %s as %q", x.Name, y.Name, st)
				}
			}
		}
		return nil
	})
}
