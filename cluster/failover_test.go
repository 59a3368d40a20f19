package cluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// Losing more than half the hosts at once looks like a partition on the
// leader's side: the leader freezes instead of marking them down.
func TestFailoverFreezesOnMassLoss(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.MaxVoters = 3
		// Deaths gossip detects within the grace of each other count as
		// simultaneous; a generous grace keeps a loaded test machine from
		// spreading the three detections wider than that.
		c.DownGrace = 5 * time.Second
	}})
	h.Leader(10 * time.Second)
	h.Add("p4", 0)
	h.Add("p5", 0)
	var leader *clustertest.Peer
	testkit.Eventually(t, 20*time.Second, func() error {
		leader = h.Leader(10 * time.Second)
		up := 0
		for _, hst := range leader.Node.Store().Hosts() {
			if hst.Status == fsm.HostUp {
				up++
			}
		}
		if up != 5 {
			return fmt.Errorf("%d hosts up", up)
		}
		return nil
	})
	// Kill the two non-voters and one voting follower: 3 of 5 lost.
	victims := []string{"p4", "p5"}
	for _, p := range h.Followers(leader) {
		if p.Name != "p4" && p.Name != "p5" {
			victims = append(victims, p.Name)
			break
		}
	}
	for _, v := range victims {
		h.Kill(v)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		if metricValue(t, leader, "corral_failover_freezes_total", "") < 1 {
			return errors.New("failover not frozen yet")
		}
		return nil
	})
	for _, v := range victims {
		hst, _ := leader.Node.Store().Host(v)
		if hst.Status != fsm.HostUp {
			t.Fatalf("host %s marked %s during a freeze", v, hst.Status)
		}
	}
	// An operator can still force a host down.
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), &fsm.SetHostStatus{Name: victims[0], Status: fsm.HostDown}); err != nil {
		t.Fatal(err)
	}
	// Hosts coming back unfreeze it; the rest are then judged normally.
	h.Restart(victims[1])
	h.Restart(victims[2])
	testkit.Eventually(t, 20*time.Second, func() error {
		for _, v := range victims[1:] {
			hst, _ := leader.Node.Store().Host(v)
			if hst.Status != fsm.HostUp {
				return fmt.Errorf("%s is %s", v, hst.Status)
			}
		}
		return nil
	})
}

// On gossip's word alone (the leader not judging by its own pings), a dead
// host is confirmed only after the grace: a short blip is not a death.
func TestDeadHostConfirmedAfterGrace(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.DownGrace = 2 * time.Second
		c.SilentGrace = -1
	}})
	leader := h.Leader(10 * time.Second)
	victim := h.Followers(leader)[0].Name
	testkit.Eventually(t, 10*time.Second, func() error {
		if len(leader.Node.Store().Hosts()) != 3 {
			return errors.New("hosts not registered")
		}
		return nil
	})
	// Kill may take a while to return (it waits for the peer's loops); the
	// grace runs from the moment the peer starts to go.
	killed := time.Now()
	h.Kill(victim)
	testkit.Eventually(t, 20*time.Second, func() error {
		hst, _ := h.Leader(10 * time.Second).Node.Store().Host(victim)
		if hst.Status != fsm.HostDown {
			return fmt.Errorf("%s is %s", victim, hst.Status)
		}
		return nil
	})
	if took := time.Since(killed); took < 2*time.Second {
		t.Fatalf("host marked down %s after the kill, before the 2s grace", took)
	}
}

// A host cut off from every peer (raft and gossip) is dead to gossip and
// silent to the leader's own pings: the leader confirms it on both without
// waiting for down_grace (a minute here, longer than the test may take).
// Healed, it comes back up.
func TestSilentHostConfirmedWithoutDownGrace(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) { c.DownGrace = time.Minute }})
	leader := h.Leader(10 * time.Second)
	victim := h.Followers(leader)[0].Name
	testkit.Eventually(t, 10*time.Second, func() error {
		if len(leader.Node.Store().Hosts()) != 3 {
			return errors.New("hosts not registered")
		}
		return nil
	})
	h.Partition(victim)
	testkit.Eventually(t, 20*time.Second, func() error {
		hst, _ := h.Leader(10 * time.Second).Node.Store().Host(victim)
		if hst.Status != fsm.HostDown {
			return fmt.Errorf("%s is %s", victim, hst.Status)
		}
		return nil
	})
	h.Heal(victim)
	testkit.Eventually(t, 30*time.Second, func() error {
		hst, _ := h.Leader(10 * time.Second).Node.Store().Host(victim)
		if hst.Status != fsm.HostUp {
			return fmt.Errorf("%s is %s after the heal", victim, hst.Status)
		}
		return nil
	})
}
