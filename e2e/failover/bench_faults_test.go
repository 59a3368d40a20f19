package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// lossRate is the share of packets dropped between peers in the
// benchmark's loss rows.
const lossRate = 0.05

// benchFaults runs the benchmark's degraded-network and starved-peer rows
// on c: 5 % loss between every pair of peers for a quiet window, then host
// kills under that loss; then one follower, and then the leader,
// CPU-starved for the starvation window.
func (c *benchCluster) benchFaults(t *testing.T, o benchOptions) {
	t.Helper()
	f, is := c.f, c.is
	if o.rows["loss"] {
		is.lossy(f.c.Agents, lossRate)
		healed := false
		heal := func() {
			if !healed {
				healed = true
				is.heal()
			}
		}
		leader := f.c.Leader(10 * time.Second)
		c.load()
		w := f.watchWindow(f.other(leader), o.lossQuiet)
		t.Logf("%s: 5%% loss, quiet %s: %s", c.name, o.lossQuiet, w)
		c.line(fmt.Sprintf("5%% loss between peers, no death for %s: %d false reassignments, %d hosts seen down, %d elections",
			o.lossQuiet, w.moved, len(w.downSeen), w.elections))
		c.moved["loss-false-reassignments"] += w.moved
		for i := range o.lossRuns {
			c.load()
			_, d, r := f.benchHostKill(t)
			c.add("5% loss: host kill: host marked down", d)
			c.add("5% loss: host kill: all its servers re-owned", r)
			t.Logf("%s: host kill under 5%% loss %d/%d: %s", c.name, i+1, o.lossRuns, c.last())
		}
		heal()
	}
	if !o.rows["starve"] {
		return
	}
	if err := is.canStarve(); err != nil {
		c.line(fmt.Sprintf("starvation rows skipped: %v", err))
		c.skipped["starve-false-reassignments"] = err.Error()
		return
	}
	for _, pct := range o.starvePct {
		c.benchStarve(t, o.starveFor, pct)
	}
}

// benchStarve starves one follower, then the leader, at pct % of one CPU
// for starveFor each, and reports each.
func (c *benchCluster) benchStarve(t *testing.T, starveFor time.Duration, pct int) {
	t.Helper()
	f, is := c.f, c.is
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
		c.load()
		w, thr := f.starveFor(t, is, victim, obs, pct, starveFor)
		kept := "all kept"
		if err := f.keeps(obs, srv, victim.Name); err != nil {
			kept = err.Error()
		}
		after := f.c.Leader(10 * time.Second)
		t.Logf("%s: %s %s starved at %d%% of a CPU for %s (%s): %s; its %d servers: %s; leader after: %s",
			c.name, role, victim.Name, pct, starveFor, thr, w, own, kept, after.Name)
		c.line(fmt.Sprintf("one peer (the %s) at %d%% of one CPU for %s: %d false reassignments, %d hosts seen down, %d elections, its %d servers: %s (%s)",
			role, pct, starveFor, w.moved, len(w.downSeen), w.elections, own, kept, thr))
		c.moved["starve-false-reassignments"] += w.moved
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
}

// benchHostPause pauses (SIGSTOP) the non-leader host owning the most
// servers, times gossip death (on the leader), HostDown and re-ownership,
// then resumes it and waits until it is back.
func (f *fixture) benchHostPause(t *testing.T) (gossipDead, down, reowned time.Duration) {
	t.Helper()
	leader := f.c.Leader(10 * time.Second)
	victim, lost, obs := f.pick(leader)
	paused := time.Now()
	victim.Pause()
	resumed := false
	defer func() {
		if !resumed {
			victim.Resume()
		}
	}()
	gossipDead, down, reowned = f.timeLoss(leader, victim, obs, lost, paused)
	victim.Resume()
	resumed = true
	f.settle(t, victim)
	return gossipDead, down, reowned
}

// benchHostPartition cuts the non-leader host owning the most servers off
// from its peers, times gossip death (on the leader), HostDown and
// re-ownership, then heals the cut and waits until it is back.
func (f *fixture) benchHostPartition(t *testing.T, is *isolation) (gossipDead, down, reowned time.Duration) {
	t.Helper()
	leader := f.c.Leader(10 * time.Second)
	victim, lost, obs := f.pick(leader)
	var others []*e2e.Agent
	for _, a := range f.c.Agents {
		if a != victim {
			others = append(others, a)
		}
	}
	healed := false
	defer func() {
		if !healed {
			is.heal()
		}
	}()
	is.cut(victim, others)
	cut := time.Now() // once every rule is in (installing them takes a while)
	gossipDead, down, reowned = f.timeLoss(leader, victim, obs, lost, cut)
	is.heal()
	healed = true
	f.settle(t, victim)
	return gossipDead, down, reowned
}

// emitRows prints make bench's rows of c (testkit/benchrow): the p99 of
// each fault's re-ownership (or next write), and the servers moved in the
// windows with loss or a starved peer and no death. A fault not run
// prints no row; one the machine cannot inject prints its row skipped.
func (c *benchCluster) emitRows(t *testing.T, o benchOptions) {
	t.Helper()
	p99 := func(row, sample, goal, fault string) {
		if !o.rows[fault] {
			return
		}
		r := benchrow.Row{Row: row, Unit: "s", Goal: goal, Scale: fmt.Sprintf("%d runs, 5 hosts, 30 servers", o.runs)}
		if s := c.samples[sample]; len(s) > 0 {
			_, q99, _ := summary(s)
			r.Value = q99.Seconds()
		} else if c.is == nil && fault == "partition" {
			r.Skipped = fmt.Sprint(c.isErr)
		} else {
			t.Errorf("no sample of %q for make bench's row %s", sample, row)
			return
		}
		benchrow.Emit(t, r)
	}
	p99("host-kill-reowned-p99", "host kill: all its servers re-owned", "<= 1", "kill")
	p99("leader-kill-write-p99", "leader kill: next write committed", "<= 1", "leader")
	p99("host-pause-reowned-p99", "host pause: all its servers re-owned", "<= 3", "pause")
	p99("host-partition-reowned-p99", "host partition: all its servers re-owned", "<= 3", "partition")
	for _, w := range []struct {
		row, fault string
		window     time.Duration
	}{{"loss-false-reassignments", "loss", o.lossQuiet}, {"starve-false-reassignments", "starve", 2 * o.starveFor}} {
		if !o.rows[w.fault] {
			continue
		}
		r := benchrow.Row{Row: w.row, Value: float64(c.moved[w.row]), Unit: "servers", Goal: "= 0",
			Scale: fmt.Sprintf("%s without a death", w.window)}
		switch {
		case c.is == nil:
			r.Skipped = fmt.Sprint(c.isErr)
		case c.skipped[w.row] != "":
			r.Skipped = c.skipped[w.row]
		}
		benchrow.Emit(t, r)
	}
}
