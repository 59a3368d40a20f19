package failover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// TestFailoverBenchmark measures failover on real processes; it is not a
// timed test and runs only with CORRAL_BENCH=1:
//
//	CORRAL_BENCH=1 go test -v -count=1 -timeout 30m -run TestFailoverBenchmark ./e2e/failover/
//
// CORRAL_BENCH_RUNS (default 10) sets the runs of each fault, CORRAL_BENCH_QUIET
// (default 30s) the no-fault window, and CORRAL_BENCH_ENV a comma-separated
// list of KEY=VALUE settings for every agent (e.g. to try tuned timings);
// without it the agents run with the product defaults.
//
// CORRAL_BENCH_LOSS_QUIET (default 60s) sets the quiet window under 5 %
// packet loss, CORRAL_BENCH_STARVE (default 30s) how long one peer is
// CPU-starved and CORRAL_BENCH_STARVE_PERCENT (default 5; a comma-separated
// list runs each in turn) the share of one CPU it gets meanwhile.
//
// On one cluster of five hosts with 30 ACTIVE servers it measures:
//   - no fault for the quiet window: reassignments must stay 0;
//   - host kill: SIGKILL a non-leader host, time until every one of its
//     servers is owned by a live host (API polled every 20 ms), with the
//     time gossip on the leader reported it dead and the time it was
//     marked down; the host is restarted between runs;
//   - leader kill: SIGKILL the leader, time until a write (a flavor create
//     through a survivor, a new attempt every 20 ms) is committed, with the
//     time a survivor first reports another leader;
//   - with 5 % of the packets between peers dropped (root, iptables and
//     cgroup2 needed, else these rows are skipped): false reassignments
//     over the quiet window, then host kills as above;
//   - one peer CPU-starved (a CFS quota: cgroup v2's cpu.max, else a
//     cgroup v1 cpu group; without either these rows are skipped), a
//     follower then the leader: false reassignments and whether its own
//     servers stayed.
func TestFailoverBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("benchmark: set CORRAL_BENCH=1 to run it")
	}
	runs := 10
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	quiet := 30 * time.Second
	if v, err := time.ParseDuration(os.Getenv("CORRAL_BENCH_QUIET")); err == nil && v > 0 {
		quiet = v
	}
	var env []string
	for _, kv := range strings.Split(os.Getenv("CORRAL_BENCH_ENV"), ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			env = append(env, kv)
		}
	}
	settings := "product defaults"
	if len(env) > 0 {
		settings = strings.Join(env, " ")
	}
	lossQuiet := 60 * time.Second
	if v, err := time.ParseDuration(os.Getenv("CORRAL_BENCH_LOSS_QUIET")); err == nil && v > 0 {
		lossQuiet = v
	}
	starveFor := 30 * time.Second
	if v, err := time.ParseDuration(os.Getenv("CORRAL_BENCH_STARVE")); err == nil && v > 0 {
		starveFor = v
	}
	var starvePct []int
	for _, p := range strings.Split(os.Getenv("CORRAL_BENCH_STARVE_PERCENT"), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && v > 0 && v <= 100 {
			starvePct = append(starvePct, v)
		}
	}
	if len(starvePct) == 0 {
		starvePct = []int{5}
	}
	is, isErr := tryIsolation(t, 5)
	if isErr != nil && !errors.Is(isErr, errNoIsolation) {
		t.Fatal(isErr)
	}
	var f *fixture
	if is != nil {
		f = startIn(t, is.cg, 5, 60, sim.Options{DeployDelay: 200 * time.Millisecond}, env...)
	} else {
		f = start(t, 5, 60, sim.Options{DeployDelay: 200 * time.Millisecond}, env...)
	}
	ids := f.boot(30, "bench")
	f.waitServers(f.c.Agents[0], ids, 120*time.Second, "30 servers ACTIVE", active)

	// No fault.
	end := time.Now().Add(quiet)
	for time.Now().Before(end) {
		if err := f.calm(); err != nil {
			t.Fatalf("no-fault window: %v", err)
		}
		time.Sleep(time.Second) // the quiet period is what is measured
	}
	if err := f.calm(); err != nil {
		t.Fatalf("no-fault window: %v", err)
	}

	var dead, down, reowned, elected, write []time.Duration
	for i := range runs {
		g, d, r := f.benchHostKill(t)
		dead, down, reowned = append(dead, g), append(down, d), append(reowned, r)
		t.Logf("host kill %d/%d: gossip dead %s, marked down %s, servers re-owned %s", i+1, runs, ms(g), ms(d), ms(r))
	}
	for i := range runs {
		e, w := f.benchLeaderKill(t, i)
		elected, write = append(elected, e), append(write, w)
		t.Logf("leader kill %d/%d: new leader %s, write committed %s", i+1, runs, ms(e), ms(w))
	}

	var faults []string
	if is == nil {
		faults = append(faults, fmt.Sprintf("loss and starvation rows skipped: %v", isErr))
	} else {
		faults = f.benchFaults(t, is, runs, lossQuiet, starveFor, starvePct)
	}

	row := func(name string, ds []time.Duration, goal string) {
		p50, p99, worst := summary(ds)
		t.Logf("| %-44s | %8s | %8s | %8s | %-6s |", name, ms(p50), ms(p99), ms(worst), goal)
	}
	t.Logf("failover benchmark: 5 hosts, 30 ACTIVE servers, %d runs per fault, %s", runs, settings)
	t.Logf("| %-44s | %8s | %8s | %8s | %-6s |", "measure (from the SIGKILL)", "p50", "p99", "max", "goal")
	t.Logf("|%s|%s|%s|%s|%s|", strings.Repeat("-", 46), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 8))
	row("host kill: gossip on the leader says dead", dead, "")
	row("host kill: host marked down (HostDown)", down, "")
	row("host kill: all its servers re-owned", reowned, "≤ 3s")
	row("leader kill: a survivor reports a new leader", elected, "")
	row("leader kill: next write committed", write, "≤ 1s")
	t.Logf("no fault for %s: 0 reassignments, 0 freezes, every host up", quiet)
	for _, l := range faults {
		t.Log(l)
	}
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// benchHostKill kills the non-leader host owning the most servers, times
// gossip death (on the leader), HostDown and re-ownership, then restarts it.
func (f *fixture) benchHostKill(t *testing.T) (gossipDead, down, reowned time.Duration) {
	t.Helper()
	leader := f.c.Leader(10 * time.Second)
	obs := f.other(leader)
	srv, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	victim := f.victim(srv, leader)
	lost := ownedBy(srv, victim.Name)
	obs = f.other(leader, victim)
	killed := time.Now()
	victim.Kill()
	f.poll("servers re-owned", 60*time.Second, 20*time.Millisecond, func() error {
		if gossipDead == 0 && f.memberStatus(leader, victim.Name) == "dead" {
			gossipDead = time.Since(killed)
		}
		if down == 0 {
			if hs, err := f.hosts(leader); err == nil && hs[victim.Name].Status == "down" {
				down = time.Since(killed)
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
	reowned = time.Since(killed)
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
		gossipDead = time.Since(killed)
	}
	f.restart(t, victim)
	return gossipDead, down, reowned
}

// benchLeaderKill kills the leader and times a new leader and the first
// committed write through the survivors, then restarts it.
func (f *fixture) benchLeaderKill(t *testing.T, run int) (elected, write time.Duration) {
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
	killed := time.Now()
	leader.Kill()
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
					elected = time.Since(killed)
					break
				}
			}
		}
		select {
		case <-done:
			wg.Wait()
			f.restart(t, leader)
			if elected == 0 || elected > write {
				elected = write
			}
			return elected, write
		case <-ctx.Done():
			t.Fatal("no write committed within 60s of the leader kill")
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue
		}
		a := survivors[attempt%len(survivors)]
		id := fmt.Sprintf("bench-%d-%d", run, attempt)
		wg.Go(func() {
			defer func() { <-sem }()
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			defer acancel()
			err := a.Client().Do(actx, http.MethodPost, "/compute/v2.1/flavors", map[string]any{"flavor": map[string]any{
				"name": id, "id": id, "vcpus": 1, "ram": 1, "disk": 1}}, nil)
			if err == nil {
				once.Do(func() {
					write = time.Since(killed) // read after done is closed
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
	f.c.AwaitReady(60 * time.Second)
	f.poll("restarted "+a.Name+" up and alive everywhere", 60*time.Second, 100*time.Millisecond, func() error {
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
