package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
)

// A leader stopped while writes pour in stops: a write raft queued just as
// it shut down (raft's batched apply queue is buffered, and such a write is
// never answered) must not hold the peer's shutdown forever.
func TestLeaderStopsUnderWrites(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			h := clustertest.Start(t, 3, clustertest.Options{})
			leader := h.Leader(10 * time.Second)
			node, name := leader.Node, leader.Name
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					for i := 0; ctx.Err() == nil; i++ {
						pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
						_, _ = node.Propose(pctx, &fsm.CreateFlavor{Flavor: fsm.Flavor{
							ID: fmt.Sprintf("f-%d-%d", w, i), Name: fmt.Sprintf("f-%d-%d", w, i), VCPUs: 1, RAM: 1, RxTxFactor: 1}})
						pcancel()
					}
				})
			}
			time.Sleep(time.Duration(50+20*round) * time.Millisecond) // writes in flight, not a wait for a state
			stopped := make(chan struct{})
			go func() { h.Kill(name); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(30 * time.Second):
				t.Fatalf("the leader %s did not stop within 30 s while writes were in flight", name)
			}
			cancel()
			wg.Wait()
		})
	}
}
