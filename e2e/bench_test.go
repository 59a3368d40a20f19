package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/ironic/sim"
)

// benchImage is the image every benchmark server deploys.
const benchImage = "http://images.example.test/bench.qcow2"

// TestBootBenchmark measures how fast three real agents build servers. It
// asserts nothing about time; it prints tables (run with -v):
//
//	CORRAL_BENCH=1 go test -count=1 -run '^TestBootBenchmark$' -v -timeout 20m ./e2e/
//
// CORRAL_BENCH_N (default 50) servers are booted at once on the simulator
// (200 ms deploys). With IRONIC_URL set, CORRAL_BENCH_REAL_N (default 10)
// servers are also booted on the real Ironic, one at a time and then all
// at once, beside the same work done directly with gophercloud
// (allocation, deploy, wait for active), and the ratio is corral's
// overhead. The agents there sync Ironic's nodes every
// CORRAL_BENCH_SYNC_INTERVAL (default 5s, the agent's default).
func TestBootBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the boot benchmark")
	}
	n := envInt(t, "CORRAL_BENCH_N", 50)
	realN := envInt(t, "CORRAL_BENCH_REAL_N", 10)
	t.Logf("machine: %s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	t.Run("sim", func(t *testing.T) { benchSim(t, n) })
	t.Run("real", func(t *testing.T) { benchReal(t, realN) })
}

func envInt(t *testing.T, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q is not a positive integer", key, v)
	}
	return n
}

func benchSim(t *testing.T, n int) {
	const deploy = 200 * time.Millisecond
	ir := SimIronic(t, sim.Options{DeployDelay: deploy, UndeployDelay: deploy})
	class := ir.Class("bench")
	const seq = 10
	nodeIDs := ir.EnrollNodes(t, n+seq, class)
	c := IronicCluster(t, 3, ir)
	AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-bench", class)
	var one []time.Duration
	for i := range seq {
		one = append(one, corralBurst(t, c, flavor, fmt.Sprintf("seq%d", i), 1).each[0])
	}
	t.Logf("\nsimulator (in-process, deploy %s), 3 agents, %d servers one at a time: boot to ACTIVE mean %s, p50 %s, max %s",
		deploy, seq, ms(mean(one)), ms(pct(one, 50)), ms(slices.Max(one)))
	before := ir.Sim.Requests("", "/v1")
	r := corralBurst(t, c, flavor, "sim", n)
	calls := float64(ir.Sim.Requests("", "/v1")-before) / float64(n)
	t.Logf("\nsimulator (in-process, deploy %s), 3 agents, %d servers booted at once:\n"+
		"  %-10s %-10s %-14s %-14s %-10s %-18s %s\n  %-10.1f %-10s %-14s %-14s %-10s %-18.1f %d",
		deploy, n, "boots/s", "wall", "p50 to ACTIVE", "p99 to ACTIVE", "max", "Ironic calls/boot", "409 retried",
		float64(n)/r.wall.Seconds(), ms(r.wall), ms(pct(r.each, 50)), ms(pct(r.each, 99)), ms(slices.Max(r.each)), calls, r.conflicts)
}

func benchReal(t *testing.T, n int) {
	ir := RealIronic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	corralClass, directClass := ir.Class("corral"), ir.Class("direct")
	enrollStart := time.Now()
	corralNodes := ir.EnrollNodes(t, 2*n, corralClass)
	ir.EnrollNodes(t, 2*n, directClass)
	t.Logf("enrolled %d nodes in %s", 4*n, ms(time.Since(enrollStart)))
	sync := os.Getenv("CORRAL_BENCH_SYNC_INTERVAL")
	if sync == "" {
		sync = "5s" // the agent's default
	}
	began := time.Now()
	c := IronicCluster(t, 3, ir, "CORRAL_IRONIC_SYNC_INTERVAL="+sync)
	AwaitNodes(t, c.Agents[0], corralNodes, 60*time.Second)
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-bench", corralClass)

	// One at a time: the latency of one boot, no contention.
	var corralSeq, directSeq []time.Duration
	for i := range n {
		corralSeq = append(corralSeq, corralBurst(t, c, flavor, fmt.Sprintf("seq%d", i), 1).each[0])
	}
	for i := range n {
		d, err := directBoot(ctx, ir, directClass, fmt.Sprintf("seq%d", i))
		if err != nil {
			t.Fatal(err)
		}
		directSeq = append(directSeq, d)
	}
	// All at once: throughput against one CPU-bound Ironic.
	cb := corralBurst(t, c, flavor, "burst", n)
	db := directBurst(ctx, t, ir, directClass, n)

	row := func(name string, a, b time.Duration) string {
		return fmt.Sprintf("  %-28s %-10s %-10s %.2f\n", name, ms(a), ms(b), a.Seconds()/b.Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nreal Ironic at %s, 3 agents, %d servers per run (corral: boot to ACTIVE; direct: gophercloud allocation + deploy + wait active):\n", ir.URL, n)
	fmt.Fprintf(&b, "  %-28s %-10s %-10s %s\n", "", "corral", "direct", "corral/direct")
	b.WriteString(row("one at a time: mean per boot", mean(corralSeq), mean(directSeq)))
	b.WriteString(row("one at a time: p50", pct(corralSeq, 50), pct(directSeq, 50)))
	b.WriteString(row("one at a time: max", slices.Max(corralSeq), slices.Max(directSeq)))
	b.WriteString(row("all at once: p50 per boot", pct(cb.each, 50), pct(db.each, 50)))
	b.WriteString(row("all at once: max per boot", slices.Max(cb.each), slices.Max(db.each)))
	b.WriteString(row("all at once: wall", cb.wall, db.wall))
	fmt.Fprintf(&b, "  %-28s %-10.1f %-10.1f\n", "all at once: boots/s", float64(n)/cb.wall.Seconds(), float64(n)/db.wall.Seconds())
	if cb.conflicts > 0 {
		fmt.Fprintf(&b, "  corral answered 409 \"retry the request\" %d times; those boots were sent again\n", cb.conflicts)
	}
	if count, sum, err := syncMetrics(ctx, c.Leader(10*time.Second)); err == nil && count > 0 {
		fmt.Fprintf(&b, "  leader node sync every %s: %d listings of Ironic in %s, mean %s each\n",
			sync, count, ms(time.Since(began)), ms(time.Duration(sum/float64(count)*float64(time.Second))))
	}
	t.Log(b.String())
}

// syncMetrics reads the agent's node sync histogram: listings and seconds.
func syncMetrics(ctx context.Context, a *Agent) (count int, sum float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL()+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, _ := strings.Cut(line, " ")
		switch name {
		case "corral_node_sync_duration_seconds_count":
			count, err = strconv.Atoi(value)
		case "corral_node_sync_duration_seconds_sum":
			sum, err = strconv.ParseFloat(value, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("metric %s: %w", name, err)
		}
	}
	return count, sum, nil
}

// burst is the outcome of booting servers together.
type burst struct {
	each      []time.Duration // per server: POST sent → first seen ACTIVE
	wall      time.Duration   // first POST → last ACTIVE
	conflicts int             // boots answered 409 "retry the request" and sent again
}

// corralBurst boots n servers at once through the agents in turn and
// watches the server list every 50 ms for each one's first ACTIVE.
func corralBurst(t *testing.T, c *Cluster, flavor, prefix string, n int) burst {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sent := make(map[string]time.Time, n)
	var r burst
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			at := time.Now()
			cl := Compute(c.Agents[i%len(c.Agents)])
			id, err := Boot(ctx, cl, fmt.Sprintf("%s-%03d", prefix, i), flavor)
			// A 409 asking to retry created nothing: retry, and count it.
			for try := 0; try < 5 && gophercloud.ResponseCodeIs(err, http.StatusConflict) &&
				strings.Contains(err.Error(), "retry the request"); try++ {
				mu.Lock()
				r.conflicts++
				mu.Unlock()
				id, err = Boot(ctx, cl, fmt.Sprintf("%s-%03d", prefix, i), flavor)
			}
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			sent[id] = at
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cl := Compute(c.Agents[0])
	active := map[string]time.Time{}
	var last time.Time
	for len(active) < n {
		pages, err := servers.List(cl, servers.ListOpts{}).AllPages(ctx)
		var all []servers.Server
		if err == nil {
			all, err = servers.ExtractServers(pages)
		}
		if err != nil { // e.g. 503 during an election: poll again
			if perr := pause(ctx); perr != nil {
				t.Fatalf("list servers (%d of %d ACTIVE): %v", len(active), n, err)
			}
			continue
		}
		now := time.Now()
		for _, s := range all {
			if _, ours := sent[s.ID]; !ours {
				continue
			}
			if s.Status == "ERROR" {
				t.Fatalf("server %s failed: %s", s.ID, s.Fault.Message)
			}
			if _, seen := active[s.ID]; !seen && s.Status == "ACTIVE" {
				active[s.ID], last = now, now
			}
		}
		if len(active) < n {
			if err := pause(ctx); err != nil {
				t.Fatalf("%d of %d servers ACTIVE: %v", len(active), n, err)
			}
		}
	}
	r.wall = last.Sub(start)
	for id, at := range sent {
		r.each = append(r.each, active[id].Sub(at))
	}
	return r
}

// directBurst does n direct boots at once.
func directBurst(ctx context.Context, t *testing.T, ir *Ironic, class string, n int) burst {
	t.Helper()
	r := burst{each: make([]time.Duration, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { r.each[i], errs[i] = directBoot(ctx, ir, class, fmt.Sprintf("burst%d", i)) })
	}
	wg.Wait()
	r.wall = time.Since(start)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// directBoot is what a single-process client would do with gophercloud:
// allocate a node of the class, write instance_info, deploy, and poll the
// node every 50 ms until it is active.
func directBoot(ctx context.Context, ir *Ironic, class, name string) (time.Duration, error) {
	cl := ir.Env.Client
	start := time.Now()
	a, err := allocations.Create(ctx, cl, allocations.CreateOpts{ResourceClass: class, Name: ir.Env.Name("alloc-" + name)}).Extract()
	if err != nil {
		return 0, fmt.Errorf("allocation %s: %w", name, err)
	}
	for a.State == "allocating" {
		if err := pause(ctx); err != nil {
			return 0, err
		}
		if a, err = allocations.Get(ctx, cl, a.UUID).Extract(); err != nil {
			return 0, err
		}
	}
	if a.State != "active" {
		return 0, fmt.Errorf("allocation %s: %s: %s", name, a.State, a.LastError)
	}
	_, err = nodes.Update(ctx, cl, a.NodeUUID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_source", Value: benchImage},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/root_gb", Value: 100},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/display_name", Value: name},
	}).Extract()
	if err != nil {
		return 0, fmt.Errorf("instance_info of %s: %w", a.NodeUUID, err)
	}
	for {
		err = nodes.ChangeProvisionState(ctx, cl, a.NodeUUID, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr()
		if !gophercloud.ResponseCodeIs(err, http.StatusConflict) { // 409: node locked, retry
			break
		}
		if err := pause(ctx); err != nil {
			return 0, err
		}
	}
	if err != nil {
		return 0, fmt.Errorf("deploy %s: %w", a.NodeUUID, err)
	}
	for {
		n, err := nodes.Get(ctx, cl, a.NodeUUID).Extract()
		if err != nil {
			return 0, err
		}
		if n.ProvisionState == "active" && n.TargetProvisionState == "" {
			return time.Since(start), nil
		}
		if strings.Contains(n.ProvisionState, "fail") || n.ProvisionState == "error" {
			return 0, fmt.Errorf("deploy of %s: %s: %s", n.UUID, n.ProvisionState, n.LastError)
		}
		if err := pause(ctx); err != nil {
			return 0, err
		}
	}
}

func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond): // poll interval
		return nil
	}
}

// pct is the nearest-rank percentile.
func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
