package fsm

import (
	"fmt"
	"os"
	"runtime"
	"testing"
)

// BenchmarkNodeMirrorHeap is the heap a store holds for 10^5 mirrored
// nodes of one hardware (the simulator's: four properties, no
// capabilities or traits), applied as a follower applies them: msgpack
// SyncNodes entries of 500, the leader's batch.
//
//	CORRAL_BENCH=1 go test -run '^$' -bench '^BenchmarkNodeMirrorHeap$' -benchtime 1x ./fsm/
func BenchmarkNodeMirrorHeap(b *testing.B) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run")
	}
	const n = 100_000
	var entries [][]byte
	var batch []Node
	for i := range n {
		batch = append(batch, Node{UUID: fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i), Name: fmt.Sprintf("scale-%d", i),
			ResourceClass: "scale", ProvisionState: "available", PowerState: "power off",
			Properties:   map[string]string{"cpus": "8", "memory_mb": "16384", "local_gb": "100", "cpu_arch": "x86_64"},
			Capabilities: map[string]string{}, Traits: []string{}})
		if len(batch) == 500 {
			entries = append(entries, mustEncodeAs(b, &SyncNodes{Meta: at(1), Upserts: batch}, EncodingMsgpack))
			batch = nil
		}
	}
	var heap uint64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := New()
		for i, e := range entries {
			if r := s.Apply(uint64(i+1), e); r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(s)
	}
	b.ReportMetric(float64(heap)/float64(b.N)/n, "heap-B/node")
}
