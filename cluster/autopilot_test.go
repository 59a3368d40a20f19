package cluster_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

func voters(p *clustertest.Peer) (v, nv []string) {
	st := p.Node.RaftStatus()
	v, nv = slices.Clone(st.Voters), slices.Clone(st.Nonvoters)
	sort.Strings(v)
	sort.Strings(nv)
	return v, nv
}

// TestDeadVoterReplacedByNonVoter: with three voters and a non-voter, a
// voter dead for longer than DeadServerCleanupAfter is removed and the
// non-voter promoted; the cluster then survives the loss of another voter.
func TestDeadVoterReplacedByNonVoter(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) {
		c.MaxVoters = 3
		c.DeadServerCleanupAfter = time.Second
	}})
	leader := h.Leader(10 * time.Second)
	h.Add("p4", 0)
	testkit.Eventually(t, 15*time.Second, func() error {
		if _, nv := voters(leader); !slices.Equal(nv, []string{"p4"}) {
			return fmt.Errorf("non-voters %v", nv)
		}
		return nil
	})
	first := h.Followers(leader)[0]
	h.Kill(first.Name)
	testkit.Eventually(t, 20*time.Second, func() error {
		l := h.Leader(10 * time.Second)
		v, nv := voters(l)
		if slices.Contains(v, first.Name) || !slices.Contains(v, "p4") || len(v) != 3 || len(nv) != 0 {
			return fmt.Errorf("voters %v non-voters %v", v, nv)
		}
		return nil
	})
	// Another voter dies: two of three voters are left, a quorum.
	l := h.Leader(10 * time.Second)
	var second *clustertest.Peer
	for _, p := range h.Followers(l) {
		if p.Name != "p4" {
			second = p
		}
	}
	h.Kill(second.Name)
	testkit.Eventually(t, 15*time.Second, func() error {
		_, err := h.Leader(10*time.Second).Node.Propose(ctxT(t, 3*time.Second), flavor("after-two-deaths"))
		return err
	})
	// The second dead voter goes too: the two live voters are a quorum of two.
	testkit.Eventually(t, 20*time.Second, func() error {
		v, _ := voters(h.Leader(10 * time.Second))
		if slices.Contains(v, second.Name) || len(v) != 2 {
			return fmt.Errorf("voters %v", v)
		}
		return nil
	})
}

func TestRemovePeer(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) { c.DeadServerCleanupAfter = -1 }})
	leader := h.Leader(10 * time.Second)
	victim := h.Followers(leader)[0]
	if err := leader.Node.RemovePeer(ctxT(t, 5*time.Second), victim.Name); !errors.Is(err, cluster.ErrPeerAlive) {
		t.Fatalf("remove a live peer: %v", err)
	}
	if err := leader.Node.RemovePeer(ctxT(t, 5*time.Second), "nobody"); !errors.Is(err, cluster.ErrUnknownPeer) {
		t.Fatalf("remove an unknown peer: %v", err)
	}
	h.Kill(victim.Name)
	testkit.Eventually(t, 15*time.Second, func() error {
		return h.Leader(10*time.Second).Node.RemovePeer(ctxT(t, 5*time.Second), victim.Name)
	})
	v, _ := voters(h.Leader(10 * time.Second))
	if slices.Contains(v, victim.Name) || len(v) != 2 {
		t.Fatalf("voters after remove-peer: %v", v)
	}
}
