package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// writeFlavor is a small write for the election tests.
func writeFlavor(id string) fsm.Command {
	return &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: id, Name: id, VCPUs: 1, RAM: 1, RxTxFactor: 1}}
}

// A leader that stops gracefully hands leadership over first: the next
// leader is elected on the old leader's word (raft's TimeoutNow, its vote
// requests marked as a leadership transfer), not after a follower's
// heartbeat timeout, and the next write commits through it. The timeouts
// are a second long, so that a loaded machine holds no election of its own
// meanwhile.
func TestStepDownHandsLeadershipOver(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout = time.Second, time.Second, time.Second
	}})
	leader := h.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := leader.Node.Propose(ctx, writeFlavor("before")); err != nil {
		t.Fatal(err)
	}
	type observed struct {
		name string
		list func() []string
	}
	var watched []observed
	for _, p := range h.Followers(leader) {
		votes, stop := p.Node.ObserveVotes()
		defer stop()
		watched = append(watched, observed{p.Name, func() []string {
			var out []string
			for _, v := range votes() {
				out = append(out, fmt.Sprintf("from %s at term %d, transfer %v", v.ID, v.Term, v.LeadershipTransfer))
			}
			return out
		}})
	}
	old := leader.Node.RaftStatus().Term
	if err := leader.Node.StepDown(); err != nil {
		t.Fatalf("step down: %v", err)
	}
	h.Kill(leader.Name)
	next := h.Leader(10 * time.Second)
	if _, err := next.Node.Propose(ctx, writeFlavor("after")); err != nil {
		t.Fatalf("write through the next leader %s: %v", next.Name, err)
	}
	if term := next.Node.RaftStatus().Term; term != old+1 {
		t.Errorf("term went from %d to %d: want exactly one election", old, term)
	}
	for _, w := range watched {
		for _, v := range w.list() {
			if !strings.Contains(v, "transfer true") {
				t.Errorf("%s received a vote request outside a leadership transfer (%s): an election timeout ran", w.name, v)
			}
		}
	}
	// The one that did not win voted for the one that did, on the old
	// leader's word.
	voted := false
	for _, w := range watched {
		if w.name != next.Name && len(w.list()) > 0 {
			voted = true
		}
	}
	if !voted {
		t.Errorf("no follower received the next leader's vote request")
	}
}

// A follower cut off from raft for many election timeouts cannot depose
// the leader when it comes back: with pre-vote, it asks whether it could
// win before it raises its term, and without a majority that says yes its
// term stays where it was (without pre-vote it rises at every timeout,
// and the leader steps down for the higher term once the follower is
// back). Then it rejoins and applies the next write.
func TestCutFollowerRejoinsWithoutElection(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	follower := h.Followers(leader)[0]
	// The follower follows the leader's term before the cut: one it learns
	// only afterwards would look like an election.
	var term uint64
	testkit.Eventually(t, 10*time.Second, func() error {
		l, f := leader.Node.RaftStatus(), follower.Node.RaftStatus()
		if f.Leader != leader.Name || f.Term != l.Term {
			return fmt.Errorf("%s follows %q at term %d; %s leads at term %d", follower.Name, f.Leader, f.Term, leader.Name, l.Term)
		}
		term = f.Term
		return nil
	})
	h.CutRaft(follower.Name)
	time.Sleep(3 * time.Second) // the cut's length (three heartbeat timeouts and more) is what is under test
	if got := follower.Node.RaftStatus().Term; got != term {
		t.Errorf("the cut-off follower %s raised its term from %d to %d: it stood for election without a majority", follower.Name, term, got)
	}
	h.Heal(follower.Name)
	leader = h.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idx, err := leader.Node.Propose(ctx, writeFlavor("rejoined"))
	if err != nil {
		t.Fatalf("write after the heal: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if got := follower.Node.RaftStatus().AppliedIndex; got < idx {
			return fmt.Errorf("%s applied %d of %d", follower.Name, got, idx)
		}
		return nil
	})
}
