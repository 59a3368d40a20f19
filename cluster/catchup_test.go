package cluster_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// TestWipedPeerCatchesUpAsNonVoter: a follower restarted under its name on
// an empty data dir is made a non-voter, catches up, and only then is a
// voter again; no state is lost.
func TestWipedPeerCatchesUpAsNonVoter(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	for i := range 30 {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("w%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	victim := h.Followers(leader)[0].Name
	h.Kill(victim)

	// Watch the leader's configuration from now on.
	var seenNonvoter, votedBeforeCaughtUp atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond): // sampling period
			}
			st := leader.Node.RaftStatus()
			if slices.Contains(st.Nonvoters, victim) {
				seenNonvoter.Store(true)
			}
			// Once demoted, it is a voter again only with the state.
			if p := h.Peer(victim); seenNonvoter.Load() && slices.Contains(st.Voters, victim) && p != nil && p.Node != nil {
				if _, err := p.Node.Store().Flavor("w29"); err != nil {
					votedBeforeCaughtUp.Store(true)
				}
			}
		}
	}()
	h.Wipe(victim)
	p := h.Peer(victim)
	testkit.Eventually(t, 20*time.Second, func() error {
		st := leader.Node.RaftStatus()
		if !seenNonvoter.Load() {
			return fmt.Errorf("%s not seen as non-voter: voters %v non-voters %v", victim, st.Voters, st.Nonvoters)
		}
		if !slices.Contains(st.Voters, victim) {
			return fmt.Errorf("%s not a voter again: voters %v non-voters %v", victim, st.Voters, st.Nonvoters)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if votedBeforeCaughtUp.Load() {
		t.Fatal("the wiped peer was a voter again before it had the state")
	}
	for i := range 30 {
		if _, err := p.Node.Store().Flavor(fmt.Sprintf("w%02d", i)); err != nil {
			t.Fatalf("wiped peer lacks w%02d: %v", i, err)
		}
	}
	if v := metricValue(t, p, "corral_raft_caught_up_total", ""); v != 1 {
		t.Fatalf("caught-up counter %v", v)
	}
}
