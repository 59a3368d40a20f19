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

// The leader holds its entries to fsm's bounds of stored text only while
// every live peer applies them: with an older peer up (which would store
// what the others refuse) a flavor named with a NUL byte is stored as it
// always was; once that peer is gone, the same is refused.
func TestTextBoundsOnceEveryPeerAppliesThem(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(cfg *cluster.Config) {
		if cfg.Name == "p3" {
			cfg.Settings = map[string]string{"fsm_bounds": "false"}
		}
	}})
	leader := h.Leader(10 * time.Second)
	if leader.Name == "p3" {
		t.Skip("the older peer leads") // never in practice: p1 bootstraps
	}
	flavor := func(id string) *fsm.CreateFlavor {
		return &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: id, Name: "bad\x00" + id, VCPUs: 1, RAM: 1, Disk: 1, RxTxFactor: 1, IsPublic: true}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := leader.Node.Propose(ctx, flavor("old")); err != nil {
		t.Fatalf("with an older peer up: %v, want the flavor stored as before", err)
	}
	h.Kill("p3")
	testkit.Eventually(t, 20*time.Second, func() error {
		_, err := leader.Node.Propose(ctx, flavor(fmt.Sprintf("new%d", time.Now().UnixNano())))
		if !errors.Is(err, fsm.ErrInvalid) {
			return fmt.Errorf("with every live peer applying the bounds: %v, want ErrInvalid", err)
		}
		return nil
	})
}
