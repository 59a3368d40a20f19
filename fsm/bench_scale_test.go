package fsm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// scaleNodes and scaleServers size the state of the snapshot and restore
// benchmarks at scale: 10^5 Ironic nodes and 10^5 servers, each server
// holding one node (make bench-snapshot).
const scaleNodes, scaleServers = 100_000, 100_000

var (
	scaleOnce  sync.Once
	scaleStore *Store
	scaleData  []byte
)

// storeAtScale builds, once per test binary, a store by applying commands
// as the log would: three Ironic hosts, a bare-metal flavor, the nodes in
// SyncNodes entries of 500 (the mirror's batch), then one CreateServer per
// server carrying the owner and the node claim the leader would have
// decided (written directly: scheduling 10^5 boots is not what is
// measured here).
func storeAtScale(b *testing.B) (*Store, []byte) {
	b.Helper()
	if os.Getenv("CORRAL_BENCH") != "1" {
		b.Skip("set CORRAL_BENCH=1 to run (make bench-snapshot)")
	}
	scaleOnce.Do(func() {
		s := New()
		idx := uint64(0)
		apply := func(c Command) {
			idx++
			if r := s.Apply(idx, mustEncode(b, c)); r.Err != nil {
				b.Fatalf("%T: %v", c, r.Err)
			}
		}
		hosts := []string{"h1", "h2", "h3"}
		for _, h := range hosts {
			apply(&RegisterHost{Meta: at(0), Name: h, Kind: KindIronic})
		}
		f := testFlavor("bm", "bare-metal-gold")
		f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
			"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
		apply(&CreateFlavor{Meta: at(0), Flavor: f})
		node := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
		var batch []Node
		for i := range scaleNodes {
			batch = append(batch, Node{UUID: node(i), Name: fmt.Sprintf("node-%d", i), ResourceClass: "baremetal-gold",
				ProvisionState: "available", PowerState: "power off",
				Properties: map[string]string{"cpus": "64", "memory_mb": "131072", "local_gb": "371"}})
			if len(batch) == 500 || i == scaleNodes-1 {
				apply(&SyncNodes{Meta: at(1), Upserts: batch})
				batch = nil
			}
		}
		for i := range scaleServers {
			apply(&CreateServer{Meta: at(2), ID: fmt.Sprintf("10000000-0000-4000-9000-%012d", i),
				Name: fmt.Sprintf("server-%d", i), FlavorID: "bm", ImageRef: "img", Host: hosts[i%len(hosts)],
				Claim: map[string]map[string]int64{node(i % scaleNodes): {"CUSTOM_BAREMETAL_GOLD": 1}}})
		}
		if got := len(s.Servers()); got != scaleServers {
			b.Fatalf("%d servers, want %d", got, scaleServers)
		}
		scaleStore, scaleData = s, snapshotBytes(b, s)
	})
	if scaleStore == nil {
		b.Fatal("building the store at scale failed")
	}
	return scaleStore, scaleData
}

// BenchmarkSnapshotScale writes a snapshot of 10^5 nodes and 10^5
// servers (goal: ≤ 1 s).
func BenchmarkSnapshotScale(b *testing.B) {
	s, data := storeAtScale(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var locked time.Duration
	cpu := testkit.ProcessCPU()
	for b.Loop() {
		start := time.Now()
		sn := s.Snapshot() // what holds the store's read lock
		locked += time.Since(start)
		if _, err := sn.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(locked.Nanoseconds())/float64(b.N), "locked-ns/op")
}

// reportCPU reports the process CPU time per operation since cpu (every
// thread, the garbage collector's included): on a shared machine it
// varies less than the wall time.
func reportCPU(b *testing.B, cpu time.Duration) {
	if now := testkit.ProcessCPU(); now > 0 {
		b.ReportMetric(float64((now-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkRestoreScale restores a store from that snapshot (goal: ≤ 1 s)
// and checks that the restored state is the one snapshotted; the time per
// restore is a row of make bench's table (testkit/benchrow).
func BenchmarkRestoreScale(b *testing.B) {
	s, data := storeAtScale(b)
	want := s.Digest()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	r := New()
	cpu := testkit.ProcessCPU()
	for b.Loop() {
		if err := r.Restore(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	cpuPer := (testkit.ProcessCPU() - cpu) / time.Duration(b.N)
	reportCPU(b, cpu)
	if got := r.Digest(); got != want {
		b.Fatalf("restored digest %s, want %s", got, want)
	}
	benchrow.Emit(b, benchrow.Row{Row: "restore-scale", Value: b.Elapsed().Seconds() / float64(b.N), Unit: "s", Goal: "<= 1",
		Scale: fmt.Sprintf("%d nodes + %d servers (%d MB), wall, mean of %d; CPU %.2f s", scaleNodes, scaleServers,
			len(data)>>20, b.N, cpuPer.Seconds())})
}
