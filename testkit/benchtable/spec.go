package main

import (
	"fmt"
	"path"
	"time"

	"github.com/corral-dev/corral/testkit/benchrow"
)

// bench is one benchmark the table runs: a test or a Go benchmark of one
// package, and the rows it must print.
type bench struct {
	name  string // short name, the log file's too
	pkg   string // the package, relative to the module's root
	run   string // -test.run
	bench string // -test.bench; "" for a test
	// benchtime by size (-test.benchtime), for a Go benchmark.
	benchtime map[string]string
	timeout   map[string]time.Duration // -test.timeout by size
	target    string                   // the make target that runs it alone
	rows      []row
}

// row is one row a benchmark must print: its name (benchrow.Row.Row) and
// what it measures.
type row struct{ id, label string }

// benches is the table, in its order: every performance goal of
// docs/benchmarks.md that CI measures.
var benches = []bench{
	{name: "api-writes", pkg: "api", run: "^$", bench: "^BenchmarkAPIWritesVsRaft$", target: "bench-api-writes",
		benchtime: map[string]string{benchrow.Small: "1x", benchrow.Full: "1x"},
		timeout:   map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 30 * time.Minute},
		rows: []row{
			{"api-writes-leader-ratio", "API writes ÷ raw raft+boltdb (same settings), through the leader"},
			{"api-writes-spread-ratio", "API writes ÷ raw raft+boltdb, spread over the peers (forwarded)"},
		}},
	{name: "boot-accept", pkg: "e2e", run: "^TestBootAcceptBenchmark$", target: "bench-accept",
		timeout: map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 20 * time.Minute},
		rows: []row{
			{"boots-accepted-per-s", "boots accepted/s through the HTTP API of three agent processes"},
			{"boots-accepted-active", "of those boots, ACTIVE in the end"},
		}},
	{name: "mass-boot", pkg: "ironic/driver", run: "^TestMassBootBenchmark$", target: "bench-mass-boot",
		timeout: map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 60 * time.Minute},
		rows: []row{
			{"mass-boot-wall-per-deploy", "mass boot: wall time to all ACTIVE ÷ deploy time (in-process 3 peers)"},
		}},
	{name: "failover", pkg: "e2e/failover", run: "^TestFailoverBenchmark$", target: "bench-failover",
		timeout: map[string]time.Duration{benchrow.Small: 15 * time.Minute, benchrow.Full: 60 * time.Minute},
		rows: []row{
			{"host-kill-reowned-p99", "host SIGKILL → all its servers re-owned, p99"},
			{"leader-kill-write-p99", "leader SIGKILL → next write committed, p99"},
			{"host-pause-reowned-p99", "host paused (SIGSTOP) → all its servers re-owned, p99"},
			{"host-partition-reowned-p99", "host partitioned (iptables) → all its servers re-owned, p99"},
			{"loss-false-reassignments", "servers moved with 5 % packet loss between peers and no death"},
			{"starve-false-reassignments", "servers moved with one peer (a follower, then the leader) CPU-starved"},
		}},
	{name: "scale-agents", pkg: "e2e", run: "^TestScaleAgentsBenchmark$", target: "bench-scale-agents",
		timeout: map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 30 * time.Minute},
		rows: []row{
			{"agent-rss-max", "largest agent RSS after steady node syncs (three agent processes)"},
		}},
	{name: "restore", pkg: "fsm", run: "^$", bench: "^BenchmarkRestoreScale$", target: "bench-snapshot",
		benchtime: map[string]string{benchrow.Small: "1x", benchrow.Full: "3x"},
		timeout:   map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 30 * time.Minute},
		rows: []row{
			{"restore-scale", "restore of a snapshot of 10^5 nodes + 10^5 servers, per restore"},
		}},
	{name: "server-list", pkg: "api/nova", run: "^$", bench: "^BenchmarkServerList$", target: "bench-list",
		benchtime: map[string]string{benchrow.Small: "5x", benchrow.Full: "5x"},
		timeout:   map[string]time.Duration{benchrow.Small: 10 * time.Minute, benchrow.Full: 60 * time.Minute},
		rows: []row{
			{"server-list-index-per-sort", "GET /servers with deleted servers retained: CPU from the indexes ÷ sorting everything"},
		}},
}

// binary is the name of the package's test binary ("go test -c" names it
// so).
func (b bench) binary() string { return path.Base(b.pkg) + ".test" }

// args are the test binary's arguments at size.
func (b bench) args(size string) []string {
	a := []string{"-test.run", b.run, "-test.count", "1", "-test.v",
		"-test.timeout", b.timeout[size].String()}
	if b.bench != "" {
		a = append(a, "-test.bench", b.bench, "-test.benchtime", b.benchtime[size], "-test.benchmem")
	}
	return a
}

// check says what is wrong with the table's definition: every benchmark
// needs a package, a pattern, a timeout (and a benchtime) for each size
// and rows; row names are unique; two packages do not share a binary name.
func check(bs []bench) error {
	seen := map[string]string{}
	bins := map[string]string{}
	for _, b := range bs {
		if b.name == "" || b.pkg == "" || b.run == "" || len(b.rows) == 0 {
			return fmt.Errorf("benchmark %q: name, package, run pattern and rows are required", b.name)
		}
		if p, ok := bins[b.binary()]; ok && p != b.pkg {
			return fmt.Errorf("benchmark %s: packages %s and %s share the test binary name %s", b.name, p, b.pkg, b.binary())
		}
		bins[b.binary()] = b.pkg
		for _, size := range []string{benchrow.Small, benchrow.Full} {
			if b.timeout[size] <= 0 {
				return fmt.Errorf("benchmark %s: no timeout for size %s", b.name, size)
			}
			if b.bench != "" && b.benchtime[size] == "" {
				return fmt.Errorf("benchmark %s: no benchtime for size %s", b.name, size)
			}
		}
		for _, r := range b.rows {
			if other, ok := seen[r.id]; ok {
				return fmt.Errorf("row %s is in benchmarks %s and %s", r.id, other, b.name)
			}
			seen[r.id] = b.name
		}
	}
	return nil
}
