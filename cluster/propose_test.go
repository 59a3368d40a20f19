package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// ProposeCommitted on a follower returns once the leader applied the
// write, without waiting for the follower (whose raft is cut here); reads
// at default and linearizable consistency on the other peers see it at
// once, the follower's own once it is back; AwaitApplied waits for it.
func TestProposeCommittedDoesNotWaitForTheFollower(t *testing.T) {
	// p3 keeps believing in its leader while its raft is cut, and the
	// other two keep theirs on a loaded machine.
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = time.Second, time.Second, time.Second
		if c.Name == "p3" {
			c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = time.Minute, time.Minute
		}
	}})
	leader := h.Leader(15 * time.Second)
	lag := h.Peer("p3")
	if lag == leader {
		t.Fatalf("%s leads despite its minute-long timeouts: the test proves nothing", lag.Name)
	}
	testkit.Eventually(t, 15*time.Second, func() error {
		if _, err := lag.Node.ReadIndex(ctxT(t, time.Second), false); !errors.Is(err, cluster.ErrNotLeader) {
			return fmt.Errorf("p3 read index: %v", err)
		}
		if st := lag.Node.RaftStatus(); st.Leader != leader.Name {
			return fmt.Errorf("p3 believes the leader is %q", st.Leader)
		}
		return nil
	})
	h.CutRaft(lag.Name)

	idx, err := lag.Node.ProposeCommitted(ctxT(t, 10*time.Second), flavor("pc1"))
	if err != nil {
		t.Fatalf("ProposeCommitted through %s: %v", lag.Name, err)
	}
	if _, err := lag.Node.Store().Flavor("pc1"); err == nil {
		t.Fatalf("%s applied the write with its raft cut: it does not lag, the test proves nothing", lag.Name)
	}
	if _, err := leader.Node.Store().Flavor("pc1"); err != nil {
		t.Fatalf("ProposeCommitted returned before the leader applied the write: %v", err)
	}
	for _, p := range h.Running() {
		if p == lag {
			continue
		}
		for _, c := range []cluster.Consistency{cluster.Default, cluster.Linearizable} {
			readBarrier(t, p, c)
			if _, err := p.Node.Store().Flavor("pc1"); err != nil {
				t.Errorf("%s read on %s misses the write: %v", c, p.Name, err)
			}
		}
	}
	// Propose waits for this peer: not while it is cut.
	if _, err := lag.Node.Propose(ctxT(t, 3*time.Second), flavor("pc2")); err == nil || !strings.Contains(err.Error(), "not yet applied on p3") {
		t.Fatalf("Propose through %s: %v, want the write committed but not applied here", lag.Name, err)
	}
	if err := lag.Node.AwaitApplied(ctxT(t, 200*time.Millisecond), idx); err == nil {
		t.Fatalf("AwaitApplied on %s returned although its raft is cut", lag.Name)
	}
	h.Heal(lag.Name)
	if err := lag.Node.AwaitApplied(ctxT(t, 20*time.Second), idx); err != nil {
		t.Fatalf("AwaitApplied on %s after the heal: %v", lag.Name, err)
	}
	if _, err := lag.Node.Store().Flavor("pc1"); err != nil {
		t.Fatalf("%s: AwaitApplied returned before the write was applied: %v", lag.Name, err)
	}
	readBarrier(t, lag, cluster.Default)
	if _, err := lag.Node.Store().Flavor("pc2"); err != nil {
		t.Errorf("default read on %s misses a write the leader applied: %v", lag.Name, err)
	}
}

// readBarrier takes a read barrier at c on p, again while no leader is
// ready (an election on a loaded machine: a write once acknowledged stays
// committed through it).
func readBarrier(t *testing.T, p *clustertest.Peer, c cluster.Consistency) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, func() error {
		if err := p.Node.ReadBarrier(ctxT(t, 5*time.Second), c); err != nil {
			return fmt.Errorf("%s read barrier on %s: %w", c, p.Name, err)
		}
		return nil
	})
}

// A leader that has not committed an entry of its term yet may not have
// applied what its predecessor acknowledged: it does not serve a default
// read from its replica, it answers "no leader" (retry), as it does to a
// follower's request for a read index.
func TestDefaultReadWaitsForTheLeadersFirstEntry(t *testing.T) {
	h := clustertest.Start(t, 1, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		return leader.Node.ReadBarrier(ctxT(t, time.Second), cluster.Default)
	})
	leader.Node.ForgetReady()
	if err := leader.Node.ReadBarrier(ctxT(t, time.Second), cluster.Default); !errors.Is(err, cluster.ErrNoLeader) {
		t.Fatalf("default read on a leader not ready: %v, want ErrNoLeader", err)
	}
	if err := leader.Node.ReadBarrier(ctxT(t, time.Second), cluster.Stale); err != nil {
		t.Fatalf("stale read on a leader not ready: %v", err)
	}
}
