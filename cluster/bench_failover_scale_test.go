package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// BenchmarkFailoverScale (make bench-failover-scale) kills a peer of an
// in-process three-peer cluster (cluster/clustertest: raft with its
// boltdb log on disk, gossip, forwarding; the harness's short gossip
// timings, the default down_grace of 1.5 s) that owns
// CORRAL_BENCH_FAILOVER_SERVERS (default 10^4) servers, each holding one
// Ironic node of the mirror, and prints the time from the kill until the
// host is marked down and until every one of its servers has a live owner
// (goal ≤ 5 s). The victim is a follower, so no election is in the
// measured path. It asserts nothing about time.
func BenchmarkFailoverScale(b *testing.B) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run (make bench-failover-scale)")
	}
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_FAILOVER_SERVERS")); err == nil && v > 0 {
		n = v
	}
	for b.Loop() {
		h := clustertest.Start(b, 3, clustertest.Options{Logger: slog.New(slog.DiscardHandler)})
		leader := h.Leader(10 * time.Second)
		testkit.Eventually(b, 10*time.Second, func() error {
			if got := len(leader.Node.Store().Hosts()); got != 3 {
				return fmt.Errorf("%d hosts registered", got)
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		propose := func(c fsm.Command) {
			if _, err := leader.Node.Propose(ctx, c); err != nil {
				b.Fatalf("%s: %v", c.Type(), err)
			}
		}
		propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1, RxTxFactor: 1,
			ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
				"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}})
		var batch []fsm.Node
		for i := range n {
			batch = append(batch, goldNode(i, false))
			if len(batch) == 500 || i == n-1 {
				propose(&fsm.SyncNodes{Upserts: batch})
				batch = nil
			}
		}
		// Every server goes to the victim: the other hosts are drained
		// while the servers are created, then undrained before the kill.
		victim := h.Followers(leader)[0].Name
		var others []string
		for _, p := range h.Running() {
			if p.Name != victim {
				others = append(others, p.Name)
				propose(&fsm.SetHostDrain{Name: p.Name, Drained: true})
			}
		}
		created := time.Now()
		work := make(chan int)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for i := range work {
					if _, err := leader.Node.Propose(ctx, &fsm.CreateServer{ID: fmt.Sprintf("10000000-0000-4000-9000-%012d", i),
						Name: fmt.Sprintf("s-%d", i), FlavorID: "bm", ImageRef: "img"}); err != nil {
						b.Errorf("create server %d: %v", i, err)
					}
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		createdIn := time.Since(created)
		for _, o := range others {
			propose(&fsm.SetHostDrain{Name: o, Drained: false})
		}
		if got := leader.Node.Store().HostLoad()[victim]; got != n {
			b.Fatalf("%s owns %d servers, want %d", victim, got, n)
		}

		killed := time.Now()
		h.Kill(victim)
		killReturned := time.Since(killed)
		var down time.Duration
		testkit.Eventually(b, 2*time.Minute, func() error {
			st := leader.Node.Store()
			if down == 0 {
				if hst, _ := st.Host(victim); hst.Status == fsm.HostDown {
					down = time.Since(killed)
				}
			}
			if left := st.HostLoad()[victim]; left > 0 {
				return fmt.Errorf("%s still owns %d servers", victim, left)
			}
			return nil
		})
		reowned := time.Since(killed)
		cancel()
		if down == 0 {
			down = reowned
		}
		st := leader.Node.Store()
		owners := map[string]int{}
		for _, v := range st.Servers() {
			hst, err := st.Host(v.Host)
			if err != nil || hst.Status != fsm.HostUp {
				b.Fatalf("server %s is owned by %q, not a live host", v.ID, v.Host)
			}
			owners[v.Host]++
		}
		b.ReportMetric(reowned.Seconds(), "reowned-s")
		r10 := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
		fmt.Printf("\nhost kill at scale: in-process cluster of 3 peers, %d servers on the killed follower\n", n)
		fmt.Printf("machine: %s/%s, %d CPUs, %s, load average %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			runtime.Version(), loadAvgFailover())
		fmt.Printf("  %-44s %s (%.0f boots/s, not measured against a goal)\n", "creating the servers (64 clients)", r10(createdIn),
			float64(n)/createdIn.Seconds())
		fmt.Printf("  %-44s %s\n", "kill (peer shutdown returned)", r10(killReturned))
		fmt.Printf("  %-44s %s\n", "kill → host marked down", r10(down))
		fmt.Printf("  %-44s %s   (goal ≤ 5 s)\n", "kill → every server owned by a live host", r10(reowned))
		fmt.Printf("  %-44s %v\n", "owners after", owners)
		h.Close()
	}
}

// loadAvgFailover is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAvgFailover() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
