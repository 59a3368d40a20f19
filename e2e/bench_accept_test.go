package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/benchrow"
)

// TestBootAcceptBenchmark measures how many boots three real agents accept
// per second through the Nova-compatible API: CORRAL_BENCH_ACCEPT_N
// (default 1,000) `POST /servers` from 64 clients, each client sending to
// one of the agents, against as many simulator nodes whose deploys take
// CORRAL_BENCH_ACCEPT_DEPLOY (default 30 s, so the owners' work overlaps
// the acceptance, as in a real burst). Every boot must be accepted (202)
// and every accepted server must then reach ACTIVE within
// CORRAL_BENCH_ACCEPT_ACTIVE (default 5m); it fails otherwise, with both
// counts. It asserts nothing about time; it prints (run with -v), and
// reports boots/s and the share ACTIVE as rows of make bench's table
// (testkit/benchrow). CORRAL_BENCH_SIZE=small: 2 s deploys (the same
// 1,000 boots: they are accepted in seconds; the deploys are the wait).
//
//	CORRAL_BENCH=1 go test -count=1 -run '^TestBootAcceptBenchmark$' -v -timeout 20m ./e2e/
func TestBootAcceptBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the boot acceptance benchmark")
	}
	size := benchrow.Size(t)
	n := envInt(t, "CORRAL_BENCH_ACCEPT_N", 1000)
	deploy := benchrow.Pick(size, 2*time.Second, 30*time.Second)
	if v := os.Getenv("CORRAL_BENCH_ACCEPT_DEPLOY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CORRAL_BENCH_ACCEPT_DEPLOY=%q is not a positive duration", v)
		}
		deploy = d
	}
	activeWithin := 5 * time.Minute
	if v := os.Getenv("CORRAL_BENCH_ACCEPT_ACTIVE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CORRAL_BENCH_ACCEPT_ACTIVE=%q is not a positive duration", v)
		}
		activeWithin = d
	}
	const clients = 64
	ir := SimIronic(t, sim.Options{DeployDelay: deploy, UndeployDelay: time.Second})
	class := ir.Class("accept")
	ir.Sim.SeedNodes(n, class)
	c := IronicCluster(t, 3, ir, "CORRAL_IRONIC_SYNC_INTERVAL=5s")
	testkit.Eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, err := Hosts(ctx, c.Agents[0])
		if err != nil {
			return err
		}
		for _, cp := range h.Capacity {
			if cp.IronicClass == class && cp.Free == n {
				return nil
			}
		}
		return fmt.Errorf("the %d nodes are not mirrored yet", n)
	})
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-accept", class)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	accepted := make(map[string]bool, n)
	start := time.Now()
	for client := range clients {
		cl := Compute(c.Agents[client%len(c.Agents)])
		wg.Go(func() {
			for i := range work {
				id, err := Boot(ctx, cl, fmt.Sprintf("acc-%04d", i), flavor)
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					accepted[id] = true
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	t.Logf("\nboots accepted through the API: %d POST /servers from %d clients over 3 agent processes (race %t)\n"+
		"  accepted %d (202), refused %d%s, in %s: %.0f boots/s   (goal ≥ 1,000/s)",
		n, clients, os.Getenv("CORRAL_RACE") == "1", len(accepted), len(failed), refusals(failed), took.Round(10*time.Millisecond),
		float64(len(accepted))/took.Seconds())
	if len(failed) > 0 {
		t.Errorf("%d of %d boots were refused%s; first: %v", len(failed), n, refusals(failed), failed[0])
	}
	scale := fmt.Sprintf("%d boots from %d clients, %s deploys", n, clients, deploy)
	benchrow.Emit(t, benchrow.Row{Row: "boots-accepted-per-s", Value: float64(len(accepted)) / took.Seconds(), Unit: "boots/s",
		Goal: ">= 1000", Scale: scale})

	active, errored, settled := awaitActive(ctx, Compute(c.Agents[0]), accepted, activeWithin)
	t.Logf("  ACTIVE %d of the %d accepted (ERROR %d) %s after the first POST", active, len(accepted), errored, settled.Sub(start).Round(time.Second))
	benchrow.Emit(t, benchrow.Row{Row: "boots-accepted-active", Value: 100 * float64(active) / float64(n), Unit: "% of the boots",
		Goal: ">= 100", Scale: scale})
	if active != n {
		t.Errorf("%d of %d boots reached ACTIVE within %s of the last acceptance (accepted %d, refused %d, ERROR %d)",
			active, n, activeWithin, len(accepted), len(failed), errored)
	}
}

// refusals counts failed boots by HTTP status ("no answer" for a boot
// that got none), e.g. " (429: 1, 503: 2)"; "" when none failed.
func refusals(errs []error) string {
	if len(errs) == 0 {
		return ""
	}
	by := map[string]int{}
	for _, err := range errs {
		code := "no answer"
		var ue gophercloud.ErrUnexpectedResponseCode
		if errors.As(err, &ue) {
			code = strconv.Itoa(ue.Actual)
		}
		by[code]++
	}
	keys := slices.Sorted(maps.Keys(by))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, by[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// awaitActive lists the servers until every one of ids is ACTIVE or
// ERROR, or within has passed, and returns how many are ACTIVE and
// ERROR and when it stopped looking.
func awaitActive(ctx context.Context, cl *gophercloud.ServiceClient, ids map[string]bool, within time.Duration) (active, errored int, at time.Time) {
	deadline := time.Now().Add(within)
	for {
		pages, err := servers.List(cl, servers.ListOpts{}).AllPages(ctx)
		var all []servers.Server
		if err == nil {
			all, err = servers.ExtractServers(pages)
		}
		if err == nil { // else (a 503 during an election): poll again
			active, errored = 0, 0
			for _, s := range all {
				switch {
				case !ids[s.ID]:
				case s.Status == "ACTIVE":
					active++
				case s.Status == "ERROR":
					errored++
				}
			}
		}
		at = time.Now()
		if active+errored == len(ids) || at.After(deadline) || ctx.Err() != nil {
			return active, errored, at
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // pacing the poll of a 30 s deploy
		}
	}
}

func TestRefusalsCountsByStatus(t *testing.T) {
	refused := func(code int) error {
		return fmt.Errorf("boot: %w", gophercloud.ErrUnexpectedResponseCode{Actual: code})
	}
	errs := []error{refused(503), refused(429), refused(503), context.DeadlineExceeded}
	if got, want := refusals(errs), " (429: 1, 503: 2, no answer: 1)"; got != want {
		t.Fatalf("refusals = %q, want %q", got, want)
	}
	if got := refusals(nil); got != "" {
		t.Fatalf("refusals of none = %q", got)
	}
}
