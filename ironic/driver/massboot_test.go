package driver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// TestMassBootBenchmark boots many servers at once on an in-process
// three-peer cluster (raft, gossip and forwarding in one process, each
// peer with its own compute manager, Ironic driver and Ironic client)
// against the simulator, and prints a table. It asserts nothing about
// time (make bench-mass-boot):
//
//	CORRAL_BENCH=1 go test -count=1 -run '^TestMassBootBenchmark$' -v -timeout 60m ./ironic/driver/
//
// CORRAL_BENCH_MASS_N (default "100,300,1000") are the boots at once,
// each on a fresh cluster, waited for with the default [ironic]
// deploy_wait = watch; CORRAL_BENCH_MASS_POLL_N (default "100"; "0":
// none) are the same boots with deploy_wait = poll, the way corral waited
// before (a worker per deploy, polling every 100 ms), in the same run.
// CORRAL_BENCH_MASS_DEPLOY (default 30s) is the simulator's deploy time.
// CORRAL_BENCH_MASS_SPREAD=1 sends each client's boots to one of the three
// peers (forwarded to the leader) instead of all to the leader.
// Two diagnostics: CORRAL_BENCH_MASS_NO_OWNERS=1 runs no compute manager,
// so only the boots' acceptance (the leader's decisions) is measured;
// CORRAL_BENCH_MASS_INMEM=1 keeps the raft log in memory (no fsync).
// Wall ÷ deploy time at the largest count is a row of make bench's table
// (testkit/benchrow); CORRAL_BENCH_SIZE=small: 1,000 boots with 10 s
// deploys, none with poll.
func TestMassBootBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the mass boot benchmark")
	}
	size := benchrow.Size(t)
	deploy := benchrow.Pick(size, 10*time.Second, 30*time.Second)
	if v := os.Getenv("CORRAL_BENCH_MASS_DEPLOY"); v != "" {
		var err error
		if deploy, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	watchN := benchCounts(t, "CORRAL_BENCH_MASS_N", benchrow.Pick(size, "1000", "100,300,1000"))
	pollN := benchCounts(t, "CORRAL_BENCH_MASS_POLL_N", benchrow.Pick(size, "0", "100"))
	var rows []massRow
	for _, n := range watchN {
		rows = append(rows, massBoot(t, n, deploy, driver.WaitWatch))
		t.Logf("%s", rows[len(rows)-1])
	}
	for _, n := range pollN {
		rows = append(rows, massBoot(t, n, deploy, driver.WaitPoll))
		t.Logf("%s", rows[len(rows)-1])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmass boot: in-process cluster of 3 peers (default [ironic] workers = 8 each), simulator with %s deploys\n", deploy)
	fmt.Fprintf(&b, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "  %-12s %-6s %-9s %-12s %-11s %-11s %-11s %-11s %-9s %-14s %-14s %s\n", "deploy_wait", "boots", "wall", "wall/deploy",
		"accepted", "accepted/s", "deploying", "p50 ACTIVE", "req/boot", "listings/boot", "node GETs/boot", "sync req")
	r100 := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-12s %-6d %-9s %-12.2f %-11s %-11.0f %-11s %-11s %-9.2f %-14.2f %-14.2f %d\n", r.mode, r.n,
			r100(r.wall), r.wall.Seconds()/deploy.Seconds(), r100(r.accepted), float64(r.n)/r.accepted.Seconds(), r100(r.requested), r100(r.p50),
			r.perBoot, r.listings, r.gets, r.sync)
	}
	b.WriteString("  accepted: all boots committed (64 clients); deploying: every node deploying or active in Ironic; times from the first boot.\n")
	b.WriteString("  req/boot: every Ironic request of the three drivers from the first boot to the last ACTIVE, polling included,\n" +
		"  divided by the boots; the leader's node sync (/v1/nodes/detail, every 5 s) is counted apart in \"sync req\".\n")
	fmt.Print(b.String())
	// make bench's row: the largest count waited for with watch.
	if slices.ContainsFunc(rows, func(r massRow) bool { return r.mode == driver.WaitWatch }) {
		last := rows[0]
		for _, r := range rows {
			if r.mode == driver.WaitWatch && r.n >= last.n {
				last = r
			}
		}
		benchrow.Emit(t, benchrow.Row{Row: "mass-boot-wall-per-deploy", Value: last.wall.Seconds() / deploy.Seconds(), Unit: "× deploy",
			Goal: "<= 1.1", Scale: fmt.Sprintf("%d boots, %s deploys, in-process 3 peers", last.n, deploy)})
	}
}

type massRow struct {
	mode             string
	n                int
	wall, p50        time.Duration
	accepted         time.Duration // all boots committed
	requested        time.Duration // every node deploying or active
	perBoot          float64
	listings, gets   float64
	sync             int
	errors, inactive int
}

func (r massRow) String() string {
	return fmt.Sprintf("%s %d boots: wall %s, %.2f req/boot (%d ERROR, %d not ACTIVE)", r.mode, r.n,
		r.wall.Round(100*time.Millisecond), r.perBoot, r.errors, r.inactive)
}

func benchCounts(t *testing.T, key, def string) []int {
	v := os.Getenv(key)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a comma-separated list of counts", key, v)
		}
		if n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// massBoot boots n servers at once on a fresh cluster and measures.
func massBoot(t *testing.T, n int, deploy time.Duration, wait string) massRow {
	quiet := slog.New(slog.DiscardHandler)
	s := sim.New(sim.Options{DeployDelay: deploy, UndeployDelay: time.Second})
	ts := httptest.NewServer(s)
	defer func() { ts.Close(); s.Close() }()
	h := clustertest.Start(t, 3, clustertest.Options{Logger: quiet, Tweak: func(c *cluster.Config) {
		c.InmemStore = os.Getenv("CORRAL_BENCH_MASS_INMEM") == "1"
	}})
	defer h.Close()
	h.Leader(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, p := range h.Running() {
		c, err := ironic.New(ctx, ironic.Options{URL: ts.URL, Logger: quiet, UserAgent: "corral-host/" + p.Name})
		if err != nil {
			t.Fatal(err)
		}
		virt, err := driver.New(driver.Config{Wait: wait, Logger: quiet}, c)
		if err != nil {
			t.Fatal(err)
		}
		workers, _ := strconv.Atoi(os.Getenv("CORRAL_BENCH_MASS_WORKERS")) // 0: the default
		m, err := compute.New(compute.Config{Logger: quiet, Workers: workers}, p.Node, virt)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := mirror.New(p.Node, p.Node, c, mirror.Config{Interval: 5 * time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); ns.Run(ctx) }()
		if os.Getenv("CORRAL_BENCH_MASS_NO_OWNERS") != "1" {
			wg.Add(1)
			go func() { defer wg.Done(); m.Run(ctx) }()
		}
	}
	s.SeedNodes(n, "baremetal-gold")
	store := func() *fsm.Store { return h.Leader(10 * time.Second).Node.Store() }
	testkit.Eventually(t, 60*time.Second, func() error {
		if got := len(store().Nodes()); got < n {
			return fmt.Errorf("mirror has %d of %d nodes", got, n)
		}
		return nil
	})
	propose := func(c fsm.Command) error {
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		defer pcancel()
		_, err := h.Leader(10*time.Second).Node.Propose(pctx, c)
		return err
	}
	f := fsm.Flavor{ID: "gold", Name: "gold", VCPUs: 1, RAM: 1, Disk: 10, RxTxFactor: 1, ExtraSpecs: map[string]string{
		"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}
	if err := propose(&fsm.CreateFlavor{Flavor: f}); err != nil {
		t.Fatal(err)
	}

	reqs := func() (all, syncs, lists, gets int) {
		all = s.Requests("", "/v1")
		syncs = s.Requests("GET", "/v1/nodes/detail")
		lists = s.Requests("GET", "/v1/nodes") - s.Requests("GET", "/v1/nodes/")
		gets = s.Requests("GET", "/v1/nodes/") - syncs
		return all, syncs, lists, gets
	}
	all0, sync0, list0, get0 := reqs()
	start := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	// 64 clients send the boots, to the leader or (CORRAL_BENCH_MASS_SPREAD=1)
	// each to one of the three peers, which forward them.
	spread := os.Getenv("CORRAL_BENCH_MASS_SPREAD") == "1"
	peers := h.Running()
	work := make(chan string)
	var sent sync.WaitGroup
	for client := range 64 {
		sent.Add(1)
		go func() {
			defer sent.Done()
			for id := range work {
				boot := &fsm.CreateServer{ID: id, Name: "m-" + id[:8], FlavorID: "gold", ImageRef: "img"}
				var err error
				if spread {
					pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
					_, err = peers[client%len(peers)].Node.Propose(pctx, boot)
					pcancel()
				} else {
					err = propose(boot)
				}
				if err != nil {
					t.Errorf("boot %s: %v", id, err)
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	sent.Wait()
	accepted := time.Since(start)

	done := map[string]time.Duration{}
	row := massRow{mode: wait, n: n, accepted: accepted}
	deadline := time.Now().Add(deploy*time.Duration(n/20+3) + 2*time.Minute)
	if os.Getenv("CORRAL_BENCH_MASS_NO_OWNERS") == "1" {
		deadline = time.Now() // only the boots' acceptance is measured
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; len(done) < n && time.Now().Before(deadline); <-tick.C {
		if row.requested == 0 {
			started := 0
			for _, st := range s.Nodes() {
				if st.ProvisionState == "deploying" || st.ProvisionState == "active" {
					started++
				}
			}
			if started == n {
				row.requested = time.Since(start)
			}
		}
		st := store()
		for _, id := range ids {
			if _, ok := done[id]; ok {
				continue
			}
			if v, err := st.Server(id); err == nil && v.TaskState == "" && (v.Status == fsm.StatusActive || v.Status == fsm.StatusError) {
				done[id] = time.Since(start)
				if v.Status == fsm.StatusError {
					row.errors++
				}
			}
		}
	}
	row.wall = time.Since(start)
	row.inactive = n - len(done) + row.errors
	all1, sync1, list1, get1 := reqs()
	row.sync = sync1 - sync0
	row.perBoot = float64((all1-all0)-(sync1-sync0)) / float64(n)
	row.listings = float64(list1-list0) / float64(n)
	row.gets = float64(get1-get0) / float64(n)
	var each []time.Duration
	for _, d := range done {
		each = append(each, d)
	}
	if len(each) > 0 {
		slices.Sort(each)
		row.p50 = each[len(each)/2]
	}
	if row.inactive > 0 {
		t.Errorf("%d of %d servers did not become ACTIVE (%d ERROR)", row.inactive, n, row.errors)
	}
	return row
}
