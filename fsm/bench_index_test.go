package fsm

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
)

// BenchmarkApplyServerChurn is the cost of Apply for the entries that
// move servers in and out of the server indexes, against live servers
// and deleted ones retained: per op, a CreateServer, a DeleteServer of it
// (no host took it: deleted at once) and a PurgeServers of the oldest
// deleted server. Sizes: 10^3 live and 10^4 deleted; with CORRAL_BENCH=1,
// 10^4 and 10^5.
func BenchmarkApplyServerChurn(b *testing.B) {
	live, deleted := 1_000, 10_000
	if os.Getenv("CORRAL_BENCH") == "1" {
		live, deleted = 10_000, 100_000
	}
	s := New()
	idx := uint64(0)
	apply := func(data []byte) {
		idx++
		if r := s.Apply(idx, data); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	apply(mustEncode(b, &CreateFlavor{Meta: at(0), Flavor: testFlavor("bm", "bm")}))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	id := func(i int) string { return fmt.Sprintf("30000000-0000-4000-8000-%012d", i) }
	create := func(i int) []byte {
		return mustEncode(b, &CreateServer{Meta: Meta{At: t0.Add(time.Duration(i) * time.Millisecond)}, ID: id(i),
			Name: "s", FlavorID: "bm", ImageRef: "img", NoValidHost: "none", ProjectID: fmt.Sprint("p", i%10)})
	}
	del := func(i int) []byte {
		return mustEncode(b, &DeleteServer{Meta: Meta{At: t0.Add(time.Duration(i) * time.Millisecond)}, ID: id(i)})
	}
	n := 0
	for range deleted {
		apply(create(n))
		apply(del(n))
		n++
	}
	for range live {
		apply(create(n))
		n++
	}
	entries := make([][3][]byte, b.N)
	for i := range entries {
		j := n + i
		entries[i] = [3][]byte{create(j), del(j), mustEncode(b, &PurgeServers{Meta: at(0),
			Before: t0.Add(time.Duration(j) * time.Millisecond), IDs: []string{id(i)}})}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testkit.ProcessCPU()
	for _, e := range entries {
		for _, data := range e {
			apply(data)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkRestoreHeapScale is the heap a store restored from the
// snapshot of 10^5 nodes and 10^5 servers holds (make bench-snapshot).
func BenchmarkRestoreHeapScale(b *testing.B) {
	_, data := storeAtScale(b)
	var heap uint64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := New()
		if err := r.Restore(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(r)
	}
	b.ReportMetric(float64(heap)/float64(b.N)/1e6, "heap-MB")
}

// BenchmarkIndexServersScale builds the server indexes of the 10^5
// servers of the scale store as a restore does: the servers noted in the
// order of the snapshot's records (by ID), then indexed at once.
func BenchmarkIndexServersScale(b *testing.B) {
	s, _ := storeAtScale(b)
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := sortedIDs(s.st.servers)
	b.ReportAllocs()
	cpu := testkit.ProcessCPU()
	for b.Loop() {
		ib := indexBuild{live: make([]liveEntry, 0, len(ids))}
		for _, id := range ids {
			v := s.st.servers[id]
			ib.add(&v)
		}
		ib.index()
	}
	reportCPU(b, cpu)
}

// BenchmarkOwned is what an owner's manager pays on each of its passes
// (compute.Manager.scan, after every burst of entries): Store.Owned of
// one of three hosts owning 1,000 live servers each (10^4 each with
// CORRAL_BENCH=1).
func BenchmarkOwned(b *testing.B) {
	per := 1_000
	if os.Getenv("CORRAL_BENCH") == "1" {
		per = 10_000
	}
	s := New()
	idx := uint64(0)
	apply := func(c Command) {
		idx++
		if r := s.Apply(idx, mustEncode(b, c)); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	apply(&CreateFlavor{Meta: at(0), Flavor: testFlavor("bm", "bm")})
	hosts := []string{"h1", "h2", "h3"}
	for _, h := range hosts {
		apply(&RegisterHost{Meta: at(0), Name: h, Kind: KindIronic})
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range per * len(hosts) {
		apply(&CreateServer{Meta: Meta{At: t0.Add(time.Duration(i) * time.Millisecond)},
			ID: fmt.Sprintf("30000000-0000-4000-8000-%012d", i), Name: "s", FlavorID: "bm", ImageRef: "img",
			Host: hosts[i%len(hosts)]})
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := s.Owned("h2"); len(got) != per {
			b.Fatalf("Owned(h2) = %d servers, want %d", len(got), per)
		}
	}
}
