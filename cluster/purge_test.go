package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// A deleted server stays visible for the retention, then the leader
// purges it with a committed entry, on every replica; a live server
// stays.
func TestLeaderPurgesDeletedServersAfterRetention(t *testing.T) {
	const retention = 2 * time.Second
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(c *cluster.Config) { c.DeletedRetention = retention }})
	leader := h.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	propose := func(c fsm.Command) {
		t.Helper()
		if _, err := leader.Node.Propose(ctx, c); err != nil {
			t.Fatalf("%s: %v", c.Type(), err)
		}
	}
	propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f1", Name: "f1", VCPUs: 1, RAM: 1, Disk: 1, RxTxFactor: 1}})
	propose(&fsm.CreateServer{ID: "gone", Name: "gone", FlavorID: "f1", ImageRef: "img"})
	propose(&fsm.CreateServer{ID: "kept", Name: "kept", FlavorID: "f1", ImageRef: "img"})
	s, err := leader.Node.Store().Server("gone")
	if err != nil {
		t.Fatal(err)
	}
	propose(&fsm.DeleteServer{ID: "gone"})
	if s.Host != "" {
		// Placed on a peer: finish the delete as its owner would.
		propose(&fsm.SetServerTask{ID: "gone", Host: s.Host, Epoch: s.Epoch, Status: fsm.StatusDeleted})
	}
	if s, err := leader.Node.Store().Server("gone"); err != nil || s.Status != fsm.StatusDeleted {
		t.Fatalf("right after the delete: %+v %v, want it visible as DELETED", s, err)
	}
	for _, p := range h.Running() {
		// A write is answered once the leader applied it: a follower may
		// not have "gone" yet either. Once it has "kept", made after it,
		// it had "gone", and its absence is the purge's.
		testkit.Eventually(t, 20*time.Second, func() error {
			if _, err := p.Node.Store().Server("kept"); err != nil {
				return fmt.Errorf("%s has not applied the creates yet (%v)", p.Name, err)
			}
			return nil
		})
		testkit.Eventually(t, 20*time.Second, func() error {
			if _, err := p.Node.Store().Server("gone"); !errors.Is(err, fsm.ErrNotFound) {
				return fmt.Errorf("%s still has the deleted server (%v)", p.Name, err)
			}
			return nil
		})
		if _, err := p.Node.Store().Server("kept"); err != nil {
			t.Fatalf("%s lost a live server: %v", p.Name, err)
		}
	}
}
