package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

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
