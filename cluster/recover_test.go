package cluster_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// TestRecoverFromOneSurvivor: two of three peers are lost for good; the
// third's data dir becomes a one-voter cluster with every committed write,
// and two new peers under the old names join it and catch up.
func TestRecoverFromOneSurvivor(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	for i := range 15 {
		if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), flavor(fmt.Sprintf("r%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	want := leader.Node.Store().Digest()
	survivor := h.Followers(leader)[0]
	testkit.Eventually(t, 10*time.Second, func() error {
		if d := survivor.Node.Store().Digest(); d != want {
			return errors.New("survivor not caught up")
		}
		return nil
	})
	for _, p := range h.Running() {
		h.Kill(p.Name)
	}
	// Recovering an empty data dir is refused.
	if _, err := cluster.Recover(cluster.Config{Name: "x", DataDir: t.TempDir(), BindAddr: "127.0.0.1", RaftPort: 1}); !errors.Is(err, cluster.ErrNothingToRecover) {
		t.Fatalf("recover an empty dir: %v", err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(survivor.RaftAddr()))
	st, err := cluster.Recover(cluster.Config{Name: survivor.Name, DataDir: survivor.DataDir(), Transport: trans,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if st.AppliedIndex == 0 {
		t.Fatalf("recovered status %+v", st)
	}
	h.Restart(survivor.Name)
	l := h.Leader(15 * time.Second)
	if l.Name != survivor.Name {
		t.Fatalf("leader %s, want the survivor %s", l.Name, survivor.Name)
	}
	for _, p := range []string{"p1", "p2", "p3"} {
		if p != survivor.Name {
			h.Wipe(p)
		}
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		v, nv := voters(l)
		if len(v) != 3 || len(nv) != 0 {
			return fmt.Errorf("voters %v non-voters %v", v, nv)
		}
		for _, p := range h.Running() {
			if _, err := p.Node.Store().Flavor("r14"); err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
		}
		return nil
	})
	if _, err := l.Node.Propose(ctxT(t, 5*time.Second), flavor("after-recover")); err != nil {
		t.Fatal(err)
	}
}
