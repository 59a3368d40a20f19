package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

func flavor(id string) *fsm.CreateFlavor {
	return &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: id, Name: "name-" + id, VCPUs: 1, RAM: 512, Disk: 1, RxTxFactor: 1, IsPublic: true}}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestElectionForwardingAndLinearizableReads(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	fol := h.Followers(leader)[0]

	if _, err := fol.Node.Propose(ctxT(t, 5*time.Second), flavor("f1")); err != nil {
		t.Fatalf("write through follower %s: %v", fol.Name, err)
	}
	// The follower applied its own write before Propose returned.
	if _, err := fol.Node.Store().Flavor("f1"); err != nil {
		t.Fatalf("follower does not read its own write: %v", err)
	}
	if got := metricValue(t, fol, "corral_forwarded_writes_total", "ok"); got < 1 {
		t.Fatalf("forwarded writes counter = %v, want >= 1", got)
	}
	for _, p := range h.Running() {
		if err := p.Node.ReadBarrier(ctxT(t, 5*time.Second), cluster.Linearizable); err != nil {
			t.Fatalf("linearizable read barrier on %s: %v", p.Name, err)
		}
		if _, err := p.Node.Store().Flavor("f1"); err != nil {
			t.Fatalf("linearizable read on %s misses the write: %v", p.Name, err)
		}
	}
	// A business error crosses the forwarding hop with its kind.
	_, err := fol.Node.Propose(ctxT(t, 5*time.Second), flavor("f1"))
	if !errors.Is(err, fsm.ErrConflict) {
		t.Fatalf("duplicate via follower: got %v, want ErrConflict", err)
	}
	// Every peer registered its host as up.
	testkit.Eventually(t, 10*time.Second, func() error {
		hosts := leader.Node.Store().Hosts()
		if len(hosts) != 3 {
			return fmt.Errorf("%d hosts", len(hosts))
		}
		for _, hst := range hosts {
			if hst.Status != fsm.HostUp {
				return fmt.Errorf("host %s is %s", hst.Name, hst.Status)
			}
		}
		return nil
	})
}

func TestFollowerRestartCatchesUp(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	victim := h.Followers(leader)[0].Name
	h.Kill(victim)
	for i := 0; i < 20; i++ {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("r%02d", i))); err != nil {
			t.Fatalf("write %d with a follower down: %v", i, err)
		}
	}
	h.Restart(victim)
	p := h.Peer(victim)
	testkit.Eventually(t, 15*time.Second, func() error {
		if got := len(p.Node.Store().Flavors()); got != 20 {
			return fmt.Errorf("restarted follower has %d of 20 flavors", got)
		}
		return nil
	})
	leader = h.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		if a, b := leader.Node.Store().Digest(), p.Node.Store().Digest(); a != b {
			return fmt.Errorf("digests differ: leader %s, restarted %s", a[:8], b[:8])
		}
		return nil
	})
}

func TestFourthPeerJoinsFromSnapshot(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.Raft.TrailingLogs = 4
		c.Raft.SnapshotThreshold = 8
	}})
	leader := h.Leader(10 * time.Second)
	for i := 0; i < 30; i++ {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("s%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Node.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	p4 := h.Add("p4", 0)
	testkit.Eventually(t, 20*time.Second, func() error {
		st := h.Leader(10 * time.Second).Node.RaftStatus()
		if len(st.Voters) != 4 {
			return fmt.Errorf("voters %v", st.Voters)
		}
		if got := len(p4.Node.Store().Flavors()); got != 30 {
			return fmt.Errorf("p4 has %d of 30 flavors", got)
		}
		return nil
	})
	restores := metricValue(t, p4, "corral_fsm_snapshot_restores_total", "")
	if restores < 1 {
		t.Fatalf("p4 caught up without a snapshot (restores=%v); the log was not compacted?", restores)
	}
}

func TestVoterLimitAndPromotionAfterLeave(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) { c.MaxVoters = 3 }})
	h.Leader(10 * time.Second)
	p4 := h.Add("p4", 0)
	testkit.Eventually(t, 20*time.Second, func() error {
		st := h.Leader(10 * time.Second).Node.RaftStatus()
		if len(st.Voters) != 3 || len(st.Nonvoters) != 1 || st.Nonvoters[0] != "p4" {
			return fmt.Errorf("voters %v nonvoters %v", st.Voters, st.Nonvoters)
		}
		return nil
	})
	leaver := h.Followers(h.Leader(10 * time.Second))[0]
	if leaver.Name == "p4" {
		leaver = h.Followers(h.Leader(10 * time.Second))[1]
	}
	if err := leaver.Node.Leave(ctxT(t, 15*time.Second)); err != nil {
		t.Fatalf("leave: %v", err)
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		l := h.Leader(10 * time.Second)
		st := l.Node.RaftStatus()
		if len(st.Voters) != 3 || len(st.Nonvoters) != 0 {
			return fmt.Errorf("voters %v nonvoters %v", st.Voters, st.Nonvoters)
		}
		for _, v := range st.Voters {
			if v == leaver.Name {
				return fmt.Errorf("%s still a voter", v)
			}
		}
		hst, err := l.Node.Store().Host(leaver.Name)
		if err != nil || hst.Status != fsm.HostLeft {
			return fmt.Errorf("host %s: %+v %v", leaver.Name, hst, err)
		}
		return nil
	})
	_ = p4
}

func TestPartitionedLeaderCannotCommit(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	old := h.Leader(10 * time.Second)
	if _, err := old.Node.Propose(ctxT(t, 5*time.Second), flavor("before")); err != nil {
		t.Fatal(err)
	}
	h.Partition(old.Name)
	// The majority elects a new leader and keeps writing.
	var leader *clustertest.Peer
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, p := range h.Followers(old) {
			if p.Node.IsLeader() {
				leader = p
				return nil
			}
		}
		return errors.New("majority has no leader yet")
	})
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor("majority")); err != nil {
		t.Fatalf("majority write: %v", err)
	}
	// The old leader cannot commit.
	if _, err := old.Node.Propose(ctxT(t, 2*time.Second), flavor("minority")); err == nil {
		t.Fatal("partitioned old leader committed a write")
	}
	h.Heal(old.Name)
	testkit.Eventually(t, 15*time.Second, func() error {
		if _, err := old.Node.Store().Flavor("majority"); err != nil {
			return fmt.Errorf("healed peer misses the majority's write: %w", err)
		}
		return nil
	})
	for _, p := range h.Running() {
		if _, err := p.Node.Store().Flavor("minority"); err == nil {
			t.Fatalf("%s has the minority write", p.Name)
		}
	}
}

func TestDeadPeerMarkedDown(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	victim := h.Followers(leader)[0].Name
	testkit.Eventually(t, 10*time.Second, func() error {
		if len(leader.Node.Store().Hosts()) != 3 {
			return errors.New("hosts not registered")
		}
		return nil
	})
	h.Kill(victim)
	testkit.Eventually(t, 20*time.Second, func() error {
		hst, err := h.Leader(10 * time.Second).Node.Store().Host(victim)
		if err != nil {
			return err
		}
		if hst.Status != fsm.HostDown {
			return fmt.Errorf("host %s is %s", victim, hst.Status)
		}
		return nil
	})
	h.Restart(victim)
	testkit.Eventually(t, 20*time.Second, func() error {
		hst, _ := h.Leader(10 * time.Second).Node.Store().Host(victim)
		if hst.Status != fsm.HostUp {
			return fmt.Errorf("host %s is %s after restart", victim, hst.Status)
		}
		return nil
	})
}

// A write that certainly did not reach a leader is retried until the
// caller's deadline, then answered with the last reason; a peer that stops
// meanwhile answers ErrShutdown.
func TestProposeRetriesUntilTheDeadline(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	cut := h.Followers(leader)[0]
	h.Partition(cut.Name)
	start := time.Now()
	_, err := cut.Node.Propose(ctxT(t, 1500*time.Millisecond), flavor("cut-off"))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "gave up after") ||
		!(errors.Is(err, cluster.ErrNoLeader) || errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, forward.ErrNotDelivered)) {
		t.Fatalf("write from a partitioned peer: %v; want the last retryable reason, given up at the deadline", err)
	}
	if took < 1400*time.Millisecond {
		t.Fatalf("gave up after %s, before the 1.5 s deadline", took)
	}
	done := make(chan error, 1)
	node := cut.Node // Kill clears it
	go func() {
		_, err := node.Propose(ctxT(t, time.Minute), flavor("stopping"))
		done <- err
	}()
	h.Kill(cut.Name)
	select {
	case err := <-done:
		if !errors.Is(err, cluster.ErrShutdown) {
			t.Fatalf("write on a stopping peer: %v, want ErrShutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write on a stopped peer is still retried")
	}
}
