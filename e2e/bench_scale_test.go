package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/benchrow"
	"github.com/corral-dev/corral/wire"
)

// TestScaleAgentsBenchmark runs three real `corral agent` processes
// against a simulator holding CORRAL_BENCH_SCALE_NODES (default 10^5)
// nodes and measures, per process: the first full mirror, the resident
// memory of each agent, the CPU the leader spends per steady second, a
// burst of 200 boots, the kill of the host owning the most servers, and a
// snapshot through the operator API. It asserts nothing about time; it
// prints a table (run with -v):
//
//	CORRAL_BENCH=1 go test -count=1 -run '^TestScaleAgentsBenchmark$' -v -timeout 30m ./e2e/
//
// CORRAL_BENCH_SCALE_AGENT_ENV adds environment variables to the agents
// (e.g. "GOMEMLIMIT=256MiB"); CORRAL_BENCH_SCALE_STEADY (seconds, default
// 30) is the steady window. The largest RSS after it is a row of make
// bench's table (testkit/benchrow). CORRAL_BENCH_SIZE=small: 10^3 nodes, a
// steady window of 10 s, 100 boots.
func TestScaleAgentsBenchmark(t *testing.T) {
	if os.Getenv("CORRAL_BENCH") != "1" {
		t.Skip("set CORRAL_BENCH=1 to run the scale benchmark")
	}
	size := benchrow.Size(t)
	n := envInt(t, "CORRAL_BENCH_SCALE_NODES", benchrow.Pick(size, 1000, 100000))
	boots := benchrow.Pick(size, 100, 200)
	steady := time.Duration(envInt(t, "CORRAL_BENCH_SCALE_STEADY", benchrow.Pick(size, 10, 30))) * time.Second
	ir := SimIronic(t, sim.Options{DeployDelay: time.Second, UndeployDelay: time.Second})
	class := ir.Class("scale")
	ir.Sim.SeedNodes(n, class)

	env := []string{"CORRAL_IRONIC_SYNC_INTERVAL=5s"}
	if e := os.Getenv("CORRAL_BENCH_SCALE_AGENT_ENV"); e != "" {
		env = append(env, strings.Fields(e)...) // e.g. GOMEMLIMIT=256MiB
	}
	start := time.Now()
	c := IronicCluster(t, 3, ir, env...)
	ready := time.Since(start)
	mirrored := map[string]time.Duration{}
	testkit.Eventually(t, 10*time.Minute, func() error {
		for _, a := range c.Agents {
			if _, ok := mirrored[a.Name]; ok {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			h, err := Hosts(ctx, a)
			cancel()
			if err != nil {
				return err
			}
			for _, cp := range h.Capacity {
				if cp.IronicClass == class && cp.Free == n {
					mirrored[a.Name] = time.Since(start)
				}
			}
			if _, ok := mirrored[a.Name]; !ok {
				return fmt.Errorf("%s does not mirror the %d nodes yet", a.Name, n)
			}
		}
		return nil
	})
	var allMirrored time.Duration
	for _, d := range mirrored {
		allMirrored = max(allMirrored, d)
	}
	rssAfterMirror := rssAll(t, c)

	// Steady: the leader's CPU per second over steady (30 s) of syncs
	// every 5 s.
	leader := c.Leader(30 * time.Second)
	cpu0 := cpuTime(t, leader)
	time.Sleep(steady) // the quiet period measured, not a wait for a state
	leaderCPU := cpuTime(t, leader) - cpu0
	rssSteady := rssAll(t, c)
	benchrow.Emit(t, benchrow.Row{Row: "agent-rss-max", Value: float64(slices.Max(rssMB(t, c))), Unit: "MB", Goal: "<= 300",
		Scale: fmt.Sprintf("%d nodes, %s of steady syncs", n, steady)})

	// A burst of boots, spread over the agents.
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-scale", class)
	burst := corralBurst(t, c, flavor, "scale", boots)
	rssAfterBoots := rssAll(t, c)

	// Snapshot through the operator API (the leader writes it).
	snapStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	body, _, err := c.Agents[0].Client().Raw(ctx, http.MethodGet, wire.SnapshotPath, nil)
	cancel()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snapTook := time.Since(snapStart)

	// Kill the follower owning the most servers; time until none is left
	// on it.
	leader = c.Leader(30 * time.Second)
	var victim *Agent
	most := -1
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	h, err := Hosts(ctx, leader)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, hv := range h.Hosts {
		for _, a := range c.Agents {
			if a.Name == hv.Name && a != leader && hv.Servers > most {
				victim, most = a, hv.Servers
			}
		}
	}
	killed := time.Now()
	victim.Kill()
	testkit.Eventually(t, 2*time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, err := Hosts(ctx, c.Leader(30*time.Second))
		if err != nil {
			return err
		}
		for _, hv := range h.Hosts {
			if hv.Name == victim.Name && hv.Servers > 0 {
				return fmt.Errorf("%s still owns %d servers", victim.Name, hv.Servers)
			}
		}
		return nil
	})
	reowned := time.Since(killed)

	var b strings.Builder
	fmt.Fprintf(&b, "\n10^5 end to end: %d simulator nodes, 3 corral agent processes (%s, race %t), node sync every 5s, agent env %q\n",
		n, runtime.Version(), os.Getenv("CORRAL_RACE") == "1", env)
	fmt.Fprintf(&b, "  %-58s %s\n", "agents ready", ready.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  %-58s %s   (goal ≤ 30 s)\n", "first full mirror, on all 3 agents (from the start)", allMirrored.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  %-58s %s\n", "RSS per agent after the first mirror", rssAfterMirror)
	fmt.Fprintf(&b, "  %-58s %s   (goal ≤ 300 MB)\n", fmt.Sprintf("RSS per agent after %s of steady syncs", steady), rssSteady)
	fmt.Fprintf(&b, "  %-58s %.2f s per 5 s sync   (goal ≤ 1 s)\n", fmt.Sprintf("leader CPU over %s of steady syncs", steady),
		leaderCPU.Seconds()*5/steady.Seconds())
	fmt.Fprintf(&b, "  %-58s wall %s, p50 %s, p99 %s\n", fmt.Sprintf("%d boots at once to ACTIVE (1 s deploys)", boots),
		burst.wall.Round(10*time.Millisecond), pct(burst.each, 50).Round(10*time.Millisecond), pct(burst.each, 99).Round(10*time.Millisecond))
	fmt.Fprintf(&b, "  %-58s %s\n", "RSS per agent after the boots", rssAfterBoots)
	fmt.Fprintf(&b, "  %-58s %s (%d MB)\n", "snapshot through the operator API", snapTook.Round(10*time.Millisecond), len(body)>>20)
	fmt.Fprintf(&b, "  %-58s %s (%d servers)\n", "SIGKILL of the host owning most servers → all re-owned", reowned.Round(10*time.Millisecond), most)
	t.Log(b.String())
}

// rssAll reads the resident memory of every running agent (MB).
func rssAll(t *testing.T, c *Cluster) string {
	t.Helper()
	var parts []string
	for _, a := range c.Agents {
		if !a.Running() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d MB", a.Name, procStatusKB(t, a.process().Pid(), "VmRSS")>>10))
	}
	return strings.Join(parts, ", ")
}

// rssMB is the resident memory of every running agent, in MB.
func rssMB(t *testing.T, c *Cluster) []int {
	t.Helper()
	var out []int
	for _, a := range c.Agents {
		if a.Running() {
			out = append(out, procStatusKB(t, a.process().Pid(), "VmRSS")>>10)
		}
	}
	if len(out) == 0 {
		t.Fatal("no agent is running")
	}
	return out
}

// procStatusKB returns a "kB" field of /proc/pid/status.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("%s of %d: %q", field, pid, line)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuTime is the user and system CPU an agent's process used so far.
func cpuTime(t *testing.T, a *Agent) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", a.process().Pid()))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}
