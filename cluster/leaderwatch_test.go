package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// startSlow starts three peers over the network whose raft timeouts
// (heartbeat, election, lease) are all ht: raft's own heartbeat timeout
// elects nobody until a follower has heard nothing from its leader for
// ht. p1 leads: it stands at once rather than after raft's first timeout.
func startSlow(t *testing.T, ht time.Duration) *clustertest.Harness {
	t.Helper()
	h := clustertest.Start(t, 3, clustertest.Options{Network: true, Tweak: func(c *cluster.Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = ht, ht, ht
	}})
	p1 := h.Peer("p1")
	testkit.Eventually(t, 60*time.Second, func() error {
		if p1.Node.IsLeader() {
			return nil
		}
		for _, p := range h.Running() {
			if st := p.Node.RaftStatus(); len(st.Voters) != 3 {
				return fmt.Errorf("%s has voters %v", p.Name, st.Voters)
			}
		}
		if st := p1.Node.RaftStatus(); st.State == "follower" {
			if err := p1.Node.StandNow(); err != nil {
				return err
			}
		}
		return errors.New("p1 does not lead yet")
	})
	if _, err := p1.Node.Propose(ctxT(t, 10*time.Second), writeFlavor("before")); err != nil {
		t.Fatal(err)
	}
	return h
}

// A leader whose process is gone (its ports closed: they refuse
// connections) is replaced on its followers' dials, long before raft's
// heartbeat timeout. Raft's timeouts are 10 s here and the leader
// heartbeats at least every 2 s, so raft itself elects nobody within 8 s
// of the kill: a leader within that bound is the refusal's doing. The
// follower ranked first (p2) finds the leader's ports refusing, asks p3
// for a pre-vote, which p3 answers for raft after its own dials are
// refused, and stands; the next write commits through it.
func TestLeaderRefusalElects(t *testing.T) {
	h := startSlow(t, 10*time.Second)
	old := h.Peer("p1").Node.RaftStatus().Term
	h.Kill("p1")
	next := h.Leader(8 * time.Second)
	if _, err := next.Node.Propose(ctxT(t, 10*time.Second), writeFlavor("after")); err != nil {
		t.Fatalf("write through the next leader %s: %v", next.Name, err)
	}
	if got := metricSum(t, next, "corral_raft_refused_leader_elections_total", "stood"); got != 1 {
		t.Errorf("the new leader %s stood on the refusal %v times; want 1", next.Name, got)
	}
	if got := metricSum(t, next, "corral_raft_leader_probes_total", "refused"); got < 1 {
		t.Errorf("the new leader %s saw no refused dial", next.Name)
	}
	for _, p := range h.Followers(next) {
		if got := metricSum(t, p, "corral_raft_refused_leader_prevotes_total", "granted"); got < 1 {
			t.Errorf("%s granted no pre-vote on the leader's refusal", p.Name)
		}
	}
	if term := next.Node.RaftStatus().Term; term != old+1 {
		t.Errorf("term went from %d to %d: want one election", old, term)
	}
}

// acceptor listens on addr as a paused process's kernel does: it
// completes every connection and never answers.
type acceptor struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func accept(t *testing.T, addr string) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	a := &acceptor{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
		}
	}()
	t.Cleanup(a.close)
	return a
}

// close closes the listener and every connection: the process is gone.
func (a *acceptor) close() {
	_ = a.ln.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conns {
		_ = c.Close()
	}
	a.conns = nil
}

// A leader that is silent but whose ports still accept connections (a
// paused or starved process: its kernel accepts for it) is not taken for
// gone: every follower dials it, is accepted, and nobody stands or grants
// a pre-vote on it. Once its ports refuse (the process died), a follower
// stands. Raft's timeouts are 20 s, so that raft itself elects nobody
// meanwhile.
func TestPausedLeaderIsNotRefused(t *testing.T) {
	h := startSlow(t, 20*time.Second)
	p1 := h.Peer("p1")
	raftAddr, gossipAddr := p1.RaftAddr(), p1.Node.GossipAddr()
	h.Kill("p1")
	paused := []*acceptor{accept(t, raftAddr), accept(t, gossipAddr)}
	for _, p := range h.Running() {
		testkit.Eventually(t, 30*time.Second, func() error {
			if metricSum(t, p, "corral_raft_leader_probes_total", "accepted") < 1 {
				return fmt.Errorf("%s has not dialed the silent leader yet", p.Name)
			}
			return nil
		})
	}
	for _, p := range h.Running() {
		for _, m := range []struct{ name, outcome string }{
			{"corral_raft_leader_probes_total", "refused"},
			{"corral_raft_refused_leader_elections_total", "stood"},
			{"corral_raft_refused_leader_elections_total", "no_majority"},
			{"corral_raft_refused_leader_prevotes_total", "granted"},
		} {
			if got := metricSum(t, p, m.name, m.outcome); got != 0 {
				t.Errorf("%s: %s{%s} = %v while the leader's ports accept; want 0", p.Name, m.name, m.outcome, got)
			}
		}
		if p.Node.IsLeader() {
			t.Errorf("%s leads while the old leader is only silent", p.Name)
		}
	}
	for _, a := range paused {
		a.close()
	}
	next := h.Leader(30 * time.Second)
	if got := metricSum(t, next, "corral_raft_refused_leader_elections_total", "stood"); got != 1 {
		t.Errorf("once the ports refused, the new leader %s stood on the refusal %v times; want 1", next.Name, got)
	}
}

// A follower that finds its leader refusing while the other voters still
// hear it (a firewall that rejects one follower's connections, say) gets
// no majority for its pre-vote, and raises no term: the leader stays.
func TestRefusalPreVoteNeedsAMajority(t *testing.T) {
	h := startSlow(t, 10*time.Second)
	leader := h.Peer("p1")
	old := leader.Node.RaftStatus().Term
	granted, needed := h.Peer("p2").Node.PreVoteOnRefusal()
	if granted >= needed {
		t.Fatalf("p2's pre-vote was granted by %d of the %d needed while p1 leads", granted, needed)
	}
	p3 := h.Peer("p3")
	if got := metricSum(t, p3, "corral_raft_refused_leader_prevotes_total", "leader_heard") +
		metricSum(t, p3, "corral_raft_refused_leader_prevotes_total", "leader_accepted"); got != 1 {
		t.Errorf("p3 checked %v pre-votes against its live leader; want 1", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := leader.Node.Propose(ctx, writeFlavor("still")); err != nil {
		t.Fatalf("write through p1 after the pre-vote: %v", err)
	}
	for _, p := range h.Running() {
		if term := p.Node.RaftStatus().Term; term != old {
			t.Errorf("%s is at term %d; want %d (no election)", p.Name, term, old)
		}
	}
}
