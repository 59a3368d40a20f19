package failover

import (
	"fmt"
	"testing"
	"time"
)

// lossRate is the share of packets dropped between peers in the
// benchmark's loss rows.
const lossRate = 0.05

// benchFaults runs the benchmark's degraded-network and starved-peer rows
// and returns them as lines of the report: 5 % loss between every pair of
// peers for a quiet window, then runs host kills under that loss; then
// one follower, and then the leader, CPU-starved for starveFor.
func (f *fixture) benchFaults(t *testing.T, is *isolation, runs int, lossQuiet, starveFor time.Duration, pcts []int) []string {
	t.Helper()
	var out []string
	agents := f.c.Agents
	is.lossy(agents, lossRate)
	healed := false
	heal := func() {
		if !healed {
			healed = true
			is.heal()
		}
	}
	defer heal() // also on a failure (t.Fatal runs deferred calls)
	leader := f.c.Leader(10 * time.Second)
	w := f.watchWindow(f.other(leader), lossQuiet)
	t.Logf("5%% loss, quiet %s: %s", lossQuiet, w)
	out = append(out, fmt.Sprintf("5%% loss between peers, no death for %s: %d false reassignments, %d hosts seen down",
		lossQuiet, w.moved, len(w.downSeen)))
	var down, reowned []time.Duration
	for i := range runs {
		_, d, r := f.benchHostKill(t)
		down, reowned = append(down, d), append(reowned, r)
		t.Logf("host kill under 5%% loss %d/%d: marked down %s, servers re-owned %s", i+1, runs, ms(d), ms(r))
	}
	p50, p99, worst := summary(down)
	out = append(out, fmt.Sprintf("5%% loss: host kill: host marked down p50 %s p99 %s max %s", ms(p50), ms(p99), ms(worst)))
	p50, p99, worst = summary(reowned)
	out = append(out, fmt.Sprintf("5%% loss: host kill: all its servers re-owned p50 %s p99 %s max %s", ms(p50), ms(p99), ms(worst)))
	heal()
	if err := is.canStarve(); err != nil {
		return append(out, fmt.Sprintf("starvation rows skipped: %v", err))
	}
	for _, pct := range pcts {
		out = append(out, f.benchStarve(t, is, starveFor, pct)...)
	}
	return out
}

// benchStarve starves one follower, then the leader, at pct % of one CPU
// for starveFor each, and returns a line of the report for each.
func (f *fixture) benchStarve(t *testing.T, is *isolation, starveFor time.Duration, pct int) []string {
	t.Helper()
	var out []string
	leader := f.c.Leader(10 * time.Second)
	srv, err := f.servers(f.other(leader))
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"follower", "leader"} {
		leader = f.c.Leader(10 * time.Second)
		victim := leader
		if role == "follower" {
			victim = f.victim(srv, leader)
		}
		obs := f.other(leader, victim)
		if srv, err = f.servers(obs); err != nil {
			t.Fatal(err)
		}
		own := len(ownedBy(srv, victim.Name))
		w, thr := f.starveFor(t, is, victim, obs, pct, starveFor)
		kept := "all kept"
		if err := f.keeps(obs, srv, victim.Name); err != nil {
			kept = err.Error()
		}
		after := f.c.Leader(10 * time.Second)
		t.Logf("%s %s starved at %d%% of a CPU for %s (%s): %s; its %d servers: %s; leader after: %s",
			role, victim.Name, pct, starveFor, thr, w, own, kept, after.Name)
		out = append(out, fmt.Sprintf("one peer (the %s) at %d%% of one CPU for %s: %d false reassignments, %d hosts seen down, its %d servers: %s (%s)",
			role, pct, starveFor, w.moved, len(w.downSeen), own, kept, thr))
		// Let it catch up before the next window.
		f.poll("every host up after the starvation", 60*time.Second, 200*time.Millisecond, func() error {
			hs, err := f.hosts(obs)
			if err != nil {
				return err
			}
			for _, h := range hs {
				if h.Status != "up" {
					return fmt.Errorf("%s is %s", h.Name, h.Status)
				}
			}
			return nil
		})
	}
	return out
}
