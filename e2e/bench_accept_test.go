package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/corral-dev/corral/ironic/sim"
)

// TestBootAcceptBenchmark measures how many boots three real agents accept
// per second through the Nova-compatible API: CORRAL_BENCH_ACCEPT_N
// (default 1,000) `POST /servers` from 64 clients, each client sending to
// one of the agents, against as many simulator nodes whose deploys take
// 30 s (so the owners' work overlaps the acceptance, as in a real burst).
// It asserts nothing about time; it prints (run with -v):
//
//	CORRAL_BENCH=1 go test -count=1 -run '^TestBootAcceptBenchmark$' -v -timeout 20m ./e2e/
func TestBootAcceptBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the boot acceptance benchmark")
	}
	n := envInt(t, "CORRAL_BENCH_ACCEPT_N", 1000)
	const clients = 64
	ir := SimIronic(t, sim.Options{DeployDelay: 30 * time.Second, UndeployDelay: time.Second})
	class := ir.Class("accept")
	ir.Sim.SeedNodes(n, class)
	c := IronicCluster(t, 3, ir, "CORRAL_IRONIC_SYNC_INTERVAL=5s")
	Eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, err := Hosts(ctx, c.Agents[0])
		if err != nil {
			return err
		}
		for _, cp := range h.Capacity {
			if cp.IronicClass == class && cp.Free == n {
				return nil
			}
		}
		return fmt.Errorf("the %d nodes are not mirrored yet", n)
	})
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-accept", class)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	var accepted int
	start := time.Now()
	for client := range clients {
		cl := Compute(c.Agents[client%len(c.Agents)])
		wg.Go(func() {
			for i := range work {
				_, err := Boot(ctx, cl, fmt.Sprintf("acc-%04d", i), flavor)
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					accepted++
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	for _, err := range failed {
		if gophercloud.ResponseCodeIs(err, 409) {
			t.Errorf("a boot was refused: %v", err)
		}
	}
	t.Logf("\nboots accepted through the API: %d POST /servers from %d clients over 3 agent processes (race %t)\n"+
		"  accepted %d (202), failed %d, in %s: %.0f boots/s   (goal ≥ 1,000/s)",
		n, clients, os.Getenv("CORRAL_RACE") == "1", accepted, len(failed), took.Round(10*time.Millisecond),
		float64(accepted)/took.Seconds())
	if len(failed) > 0 {
		t.Logf("first failure: %v", failed[0])
	}
}
