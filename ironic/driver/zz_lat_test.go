package driver_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
)

func TestZZLatency(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	h := clustertest.Start(t, 3, clustertest.Options{Logger: slog.New(slog.DiscardHandler), Tweak: func(c *cluster.Config) { c.InmemStore = os.Getenv("ZZ") == "mem" }})
	l := h.Leader(10 * time.Second)
	ctx := context.Background()
	f := fsm.Flavor{ID: "gold", Name: "gold", VCPUs: 1, RAM: 1, Disk: 10, RxTxFactor: 1}
	l.Node.Propose(ctx, &fsm.CreateFlavor{Flavor: f})
	start := time.Now()
	for range 50 {
		l.Node.Propose(ctx, &fsm.Noop{})
	}
	t.Logf("noop on leader: %s each", time.Since(start)/50)
	fol := h.Followers(l)[0]
	start = time.Now()
	for range 50 {
		fol.Node.Propose(ctx, &fsm.Noop{})
	}
	t.Logf("noop on follower: %s each", time.Since(start)/50)
	start = time.Now()
	for range 50 {
		id := uuid.NewString()
		l.Node.Propose(ctx, &fsm.CreateServer{ID: id, Name: "x", FlavorID: "gold", ImageRef: "i"})
	}
	t.Logf("create on leader: %s each", time.Since(start)/50)
}
