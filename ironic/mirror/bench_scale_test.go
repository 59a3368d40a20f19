package mirror_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// BenchmarkMirrorScale (make bench-scale) mirrors CORRAL_BENCH_SCALE_NODES
// (default 10^5) Ironic nodes of the simulator into an in-process
// three-peer cluster (cluster/clustertest: raft with its boltdb log on
// disk, gossip, forwarding), through the leader's node sync, and prints:
//
//   - the first full mirror: wall time of the leader's first sync pass
//     (listing every node, committing them all in SyncNodes entries), and
//     until all three peers applied them (goal ≤ 30 s);
//   - a steady sync pass (nothing changed in Ironic for an hour, the
//     nodes' timestamps aged so): wall and CPU time of the process around
//     the pass (goal ≤ 1 s of leader CPU). Between full passes a pass lists
//     only the nodes changed since the previous one. The process also
//     holds the simulator, whose JSON encoding of a full listing is
//     measured apart (a bare full listing by the same client, as a full
//     pass makes it: ListNodesBrief);
//   - a full sync pass with nothing changed (one every full_sync_interval):
//     wall and CPU time;
//   - heap in use after a GC, before the cluster starts and after the
//     mirror, divided by three peers (goal ≤ 300 MB per agent).
//
// It asserts nothing about time.
func BenchmarkMirrorScale(b *testing.B) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run (make bench-scale)")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CORRAL_BENCH_SCALE_NODES")); err == nil && v > 0 {
		n = v
	}
	quiet := slog.New(slog.DiscardHandler)
	for b.Loop() {
		s := sim.New(sim.Options{})
		ts := httptest.NewServer(s)
		s.SeedNodes(n, "baremetal-gold", "CUSTOM_RACK_A")
		s.Age(time.Hour) // enrolled and last changed an hour ago
		heap0 := heapInUse()
		rss0 := rss()

		h := clustertest.Start(b, 3, clustertest.Options{Logger: quiet})
		leader := h.Leader(10 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		c, err := ironic.New(ctx, ironic.Options{URL: ts.URL, Logger: quiet, UserAgent: "corral-host/" + leader.Name})
		if err != nil {
			b.Fatal(err)
		}
		ns, err := mirror.New(leader.Node, leader.Node, c, mirror.Config{Interval: time.Hour, BriefFullPass: true, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}

		start := time.Now()
		cpu0 := testkit.ProcessCPU()
		if err := ns.SyncOnce(ctx); err != nil {
			b.Fatalf("first sync: %v", err)
		}
		firstLeader, firstCPU := time.Since(start), testkit.ProcessCPU()-cpu0
		fmt.Fprintf(os.Stderr, "first sync pass on the leader: %s wall, %s CPU\n", firstLeader, firstCPU)
		testkit.Eventually(b, 5*time.Minute, func() error {
			for _, p := range h.Running() {
				if got := len(p.Node.Store().Nodes()); got != n {
					return fmt.Errorf("%s mirrors %d of %d nodes", p.Name, got, n)
				}
			}
			return nil
		})
		firstAll := time.Since(start)
		fmt.Fprintf(os.Stderr, "applied on all peers: %s\n", firstAll)
		heap1 := heapInUse()
		rss1 := rss()

		// The background: raft heartbeats and gossip of three peers, idle.
		const idle = 3 * time.Second
		cpu0 = testkit.ProcessCPU()
		time.Sleep(idle)                                                 // measuring the idle process over a fixed interval, not waiting for a state
		background := float64(testkit.ProcessCPU()-cpu0) / float64(idle) // CPU seconds per second
		net := func(cpu, wall time.Duration) time.Duration {
			return cpu - time.Duration(background*float64(wall))
		}

		// A bare full listing: the simulator's and the client's share of a
		// full pass.
		cpu0, t0 := testkit.ProcessCPU(), time.Now()
		nodes, _, err := c.ListNodesBrief(ctx)
		if err != nil || len(nodes) != n {
			b.Fatalf("listing: %d nodes, %v", len(nodes), err)
		}
		listWall, listCPU := time.Since(t0), testkit.ProcessCPU()-cpu0
		nodes = nil

		// Steady passes: nothing changed, nothing is committed.
		const passes = 3
		idx0 := leader.Node.Store().AppliedIndex()
		cpu0, t0 = testkit.ProcessCPU(), time.Now()
		for range passes {
			if err := ns.SyncOnce(ctx); err != nil {
				b.Fatalf("steady sync: %v", err)
			}
		}
		steadyWall, steadyCPU := time.Since(t0)/passes, (testkit.ProcessCPU()-cpu0)/passes
		if idx := leader.Node.Store().AppliedIndex(); idx-idx0 > 3 {
			b.Logf("steady passes: %d entries applied meanwhile (hosts' own writes)", idx-idx0)
		}

		// A full pass with nothing changed: the first pass of a new sync.
		full, err := mirror.New(leader.Node, leader.Node, c, mirror.Config{Interval: time.Hour, BriefFullPass: true, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		cpu0, t0 = testkit.ProcessCPU(), time.Now()
		if err := full.SyncOnce(ctx); err != nil {
			b.Fatalf("full sync: %v", err)
		}
		fullWall, fullCPU := time.Since(t0), testkit.ProcessCPU()-cpu0
		cancel()

		b.ReportMetric(firstAll.Seconds(), "first-mirror-s")
		b.ReportMetric(net(steadyCPU, steadyWall).Seconds(), "steady-cpu-s")
		b.ReportMetric(float64(heap1-heap0)/3/1e6, "heap-MB/agent")
		mb := func(v uint64) string { return fmt.Sprintf("%.0f MB", float64(v)/1e6) }
		r10 := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
		fmt.Printf("\nnode mirror at scale: %d simulator nodes, in-process cluster of 3 peers (boltdb log on disk)\n", n)
		fmt.Printf("machine: %s/%s, %d CPUs, %s, load average %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			runtime.Version(), loadAvg())
		fmt.Printf("  %-52s %s\n", "first full mirror, leader's pass (wall)", r10(firstLeader))
		fmt.Printf("  %-52s %s   (goal ≤ 30 s)\n", "first full mirror, applied on all 3 peers (wall)", r10(firstAll))
		fmt.Printf("  %-52s %s\n", "first full mirror, process CPU", r10(firstCPU))
		fmt.Printf("  %-52s %.0f ms CPU per second\n", "idle cluster (raft and gossip of 3 peers)", background*1000)
		fmt.Printf("  %-52s %s wall, %s CPU (%s net of idle)\n", "bare full listing (simulator + client decoding)", r10(listWall),
			r10(listCPU), r10(net(listCPU, listWall)))
		fmt.Printf("  %-52s %s wall, %s CPU (%s net of idle)\n", "steady sync pass, whole process (mean of 3)", r10(steadyWall),
			r10(steadyCPU), r10(net(steadyCPU, steadyWall)))
		fmt.Printf("  %-52s %s   (goal ≤ 1 s)\n", "steady sync pass net of idle, with the listing",
			r10(net(steadyCPU, steadyWall)))
		fmt.Printf("  %-52s %s wall, %s CPU (%s net of idle)\n", "full sync pass, nothing changed (whole process)", r10(fullWall),
			r10(fullCPU), r10(net(fullCPU, fullWall)))
		fmt.Printf("  %-52s %s → %s: %s per peer   (goal ≤ 300 MB)\n", "heap in use (3 peers in one process)",
			mb(heap0), mb(heap1), mb((heap1-heap0)/3))
		fmt.Printf("  %-52s %s → %s\n", "process RSS (simulator included)", mb(rss0), mb(rss1))
		h.Close()
		ts.Close()
		s.Close()
	}
}

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// rss is the process's resident set size (0 when /proc is absent).
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// loadAvg is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAvg() string {
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
