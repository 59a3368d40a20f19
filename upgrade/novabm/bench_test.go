package novabm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
)

// BenchmarkMigrate migrates 10^3 nodes, half of them deployed, into the
// Ironic simulator (corral faked in memory) and reports nodes per second.
func BenchmarkMigrate(b *testing.B) {
	const nodes = 1000
	d := novabmtest.Realistic(nodes/2, nodes/2)
	dir := b.TempDir()
	bmPath, novaPath := filepath.Join(dir, "nova_bm.sqlite"), filepath.Join(dir, "nova.sqlite")
	ctx := context.Background()
	if err := writeWith(ctx, bmPath, d.WriteBareMetal); err != nil {
		b.Fatal(err)
	}
	if err := writeWith(ctx, novaPath, d.WriteNova); err != nil {
		b.Fatal(err)
	}
	bm, nv, err := read(b, "sqlite:///"+bmPath, "sqlite:///"+novaPath)
	if err != nil {
		b.Fatal(err)
	}
	p := novabm.BuildPlan(bm, nv, novabm.Options{Driver: "fake-hardware", DeployKernel: "k", DeployRamdisk: "r"})
	if len(p.Nodes) != nodes {
		b.Fatalf("planned %d nodes", len(p.Nodes))
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		w := newWorldB(b)
		b.StartTimer()
		for _, r := range w.migrator(w.ir).Run(ctx, p) {
			if r.Err != nil {
				b.Fatalf("node %s: %v", r.NodeUUID, r.Err)
			}
		}
	}
	b.ReportMetric(float64(nodes*b.N)/b.Elapsed().Seconds(), "nodes/s")
}
