package novabm_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkMigrate migrates a nova baremetal deployment, half of its
// nodes deployed, with the migrator and the ironic client `corral manage baremetal-migrate` uses
// (corral faked in memory), and reports nodes per second and Ironic
// requests per node; it prints a table at the end (make bench-migrate):
//
//	go test -count=1 -run '^$' -bench '^BenchmarkMigrate$' -benchtime 1x -timeout 60m ./upgrade/novabm/
//
// sim: 10^3 nodes into the Ironic simulator (in process, on loopback).
// real: CORRAL_BENCH_MIGRATE_NODES (default 1000) nodes into the real
// Ironic at $IRONIC_URL, skipped when unset; each run enrolls nodes of
// its own (random uuids and MACs) and removes them afterwards (clean-up
// not timed), so a shared Ironic is left as it was.
func BenchmarkMigrate(b *testing.B) {
	rows := map[string]migrateRow{}
	b.Run("sim", func(b *testing.B) {
		rows["sim"] = benchMigrate(b, simTarget, func(testing.TB) int { return 1000 })
	})
	b.Run("real", func(b *testing.B) {
		rows["real"] = benchMigrate(b, realTarget, realNodes)
	})
	var out []migrateRow
	for _, k := range []string{"sim", "real"} {
		if r, ok := rows[k]; ok {
			out = append(out, r)
		}
	}
	fmt.Print(migrateTable(out))
}

// benchMigrate runs b.N migrations, each into a fresh target (or with
// fresh nodes on a real Ironic), and returns their sum.
func benchMigrate(b *testing.B, target func(testing.TB) migrateTarget, nodes func(testing.TB) int) migrateRow {
	n := nodes(b)
	b.StopTimer()
	var sum migrateRow
	for range b.N {
		r := migrateOnce(b, b, target(b), n)
		sum.target = r.target
		sum.nodes += r.nodes
		sum.deployed += r.deployed
		sum.wall += r.wall
		sum.requests += r.requests
		sum.reads += r.reads
		sum.cleanup += r.cleanup
		if sum.load1[0] == 0 {
			sum.load1[0] = r.load1[0]
		}
		sum.load1[1] = r.load1[1]
	}
	b.ReportMetric(sum.rate(), "nodes/s")
	b.ReportMetric(sum.perNode(), "req/node")
	return sum
}

func migrateTable(rows []migrateRow) string {
	var b strings.Builder
	b.WriteString("\nmigration from nova baremetal (migrator + ironic client, corral faked in memory)\n")
	fmt.Fprintf(&b, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "  %-12s %-7s %-9s %-10s %-9s %-10s %-11s %-14s %s\n", "Ironic", "nodes", "deployed", "wall", "nodes/s",
		"req/node", "GETs/node", "load 1 min", "clean-up")
	for _, r := range rows {
		clean := "-"
		if r.cleanup > 0 {
			clean = r.cleanup.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %-12s %-7d %-9d %-10s %-9.2f %-10.2f %-11.2f %-14s %s\n", r.target, r.nodes, r.deployed,
			r.wall.Round(10*time.Millisecond), r.rate(), r.perNode(), r.readsPerNode(), fmt.Sprintf("%.2f -> %.2f", r.load1[0], r.load1[1]), clean)
	}
	b.WriteString("  wall: Migrator.Run over the whole plan (Ironic, then the in-memory corral). req/node: HTTP requests of\n" +
		"  the migrator's Ironic client, state polling included, per node; GETs/node: the reads among them.\n" +
		"  clean-up (real Ironic): removing the run's nodes, allocations and ports afterwards, not timed.\n")
	return b.String()
}
