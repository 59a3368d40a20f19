package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// countingIronic counts the nodes the sync's listings return.
type countingIronic struct {
	*ironic.Client
	listed atomic.Int64
}

func (c *countingIronic) VisitNodesBrief(ctx context.Context, visit func(ironic.Node) error) (time.Time, error) {
	return c.Client.VisitNodesBrief(ctx, func(n ironic.Node) error {
		c.listed.Add(1)
		return visit(n)
	})
}

func (c *countingIronic) VisitNodes(ctx context.Context, opts ironic.ListOptions, visit func(ironic.Node) error) (time.Time, error) {
	return c.Client.VisitNodes(ctx, opts, func(n ironic.Node) error {
		c.listed.Add(1)
		return visit(n)
	})
}

// incSync is a node sync of e on a clock the test moves, whose listings
// are counted.
func incSync(t *testing.T, e *env, cfg Config) (*NodeSync, *countingIronic, *clock) {
	t.Helper()
	ir := &countingIronic{Client: e.ir}
	cfg.Registerer = e.reg
	ns, err := New(e.c, settingsOf{}, ir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	ns.now = clk.now
	return ns, ir, clk
}

// passes is the node sync passes of a kind so far.
func passes(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "corral_node_sync_passes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func mirrored(t *testing.T, e *env, id string) (name, instance string, missing bool) {
	t.Helper()
	n, err := e.c.store.Node(id)
	if err != nil {
		t.Fatalf("node %s not mirrored: %v", id, err)
	}
	return n.Name, n.InstanceUUID, n.Missing
}

// With nothing changed in Ironic, a pass between full ones reads a page
// of the newest nodes, not all of them, and commits nothing.
func TestSteadyPassListsOnlyTheNewest(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.sim.SeedNodes(250, "baremetal-gold")
	e.sim.Age(time.Hour)
	ns, ir, _ := incSync(t, e, Config{ChangeMargin: time.Nanosecond})
	syncOnce(t, ns)
	if got := len(e.c.store.Nodes()); got != 250 || passes(t, e.reg, "full") != 1 {
		t.Fatalf("first pass: %d nodes mirrored, %v full passes", got, passes(t, e.reg, "full"))
	}
	before, listed := e.c.proposals, ir.listed.Load()
	syncOnce(t, ns)
	if passes(t, e.reg, "changes") != 1 {
		t.Fatal("the second pass was not a pass of changes")
	}
	if n := ir.listed.Load() - listed; n > 10 {
		t.Fatalf("a pass with nothing changed listed %d nodes", n)
	}
	if e.c.proposals != before {
		t.Fatalf("a pass with nothing changed committed %d entries", e.c.proposals-before)
	}
}

// Whatever changes between two passes — a reservation, a property, a node
// enrolled (updated_at still null), more changes than a page — the next
// pass mirrors it.
func TestPassMirrorsEveryChange(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(400, "baremetal-gold")
	ns, _, _ := incSync(t, e, Config{ChangeMargin: time.Nanosecond})
	syncOnce(t, ns)
	ctx := context.Background()
	inst := "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"
	if err := e.ir.ReserveNode(ctx, ids[7], inst); err != nil {
		t.Fatal(err)
	}
	if err := e.ir.UpdateNode(ctx, ids[3], []ironic.PatchOp{{Op: "add", Path: "/properties/cpus", Value: 16}}); err != nil {
		t.Fatal(err)
	}
	enrolled := e.sim.Seed([]sim.NodeSpec{{Name: "enrolled", ResourceClass: "baremetal-gold", ProvisionState: "enroll"}})[0]
	// 250 more changes: more than a page of the listing.
	for i := 100; i < 350; i++ {
		e.sim.RenameNodeAt(ids[i], fmt.Sprintf("renamed-%d", i), time.Now())
	}
	syncOnce(t, ns)
	if passes(t, e.reg, "changes") != 1 {
		t.Fatal("the second pass was not a pass of changes")
	}
	if _, got, _ := mirrored(t, e, ids[7]); got != inst {
		t.Fatalf("reserved node mirrored with instance %q", got)
	}
	n, _ := e.c.store.Node(ids[3])
	if n.Properties["cpus"] != "16" {
		t.Fatalf("changed node mirrored as %+v", n)
	}
	if name, _, _ := mirrored(t, e, enrolled); name != "enrolled" {
		t.Fatalf("enrolled node mirrored as %q", name)
	}
	for i := 100; i < 350; i++ {
		if name, _, _ := mirrored(t, e, ids[i]); name != fmt.Sprintf("renamed-%d", i) {
			t.Fatalf("node %d of 250 renamed mirrored as %q", i, name)
		}
	}
}

// A change whose transaction committed after a pass listed, stamped
// before the latest change that pass saw, is mirrored by the next pass
// while it is within the change margin; beyond it (a clock stepped back),
// by the next full pass.
func TestLateCommitIsMirrored(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(5, "baremetal-gold")
	e.sim.Age(time.Hour)
	const margin = 30 * time.Second
	ns, _, clk := incSync(t, e, Config{ChangeMargin: margin, FullSyncInterval: 10 * time.Minute})
	syncOnce(t, ns)
	w := ns.watermark
	if w.IsZero() {
		t.Fatal("the full pass left no watermark")
	}
	e.sim.RenameNodeAt(ids[1], "late", w.Add(-margin/2))
	e.sim.RenameNodeAt(ids[2], "too-late", w.Add(-2*margin))
	clk.t = clk.t.Add(5 * time.Second)
	syncOnce(t, ns)
	if name, _, _ := mirrored(t, e, ids[1]); name != "late" {
		t.Fatalf("a change committed late, within the margin, is mirrored as %q", name)
	}
	if name, _, _ := mirrored(t, e, ids[2]); name == "too-late" {
		t.Fatal("a change stamped before the margin was mirrored by a pass of changes: the test does not test the margin")
	}
	clk.t = clk.t.Add(10 * time.Minute)
	syncOnce(t, ns)
	if name, _, _ := mirrored(t, e, ids[2]); name != "too-late" || passes(t, e.reg, "full") != 2 {
		t.Fatalf("the next full pass did not heal the mirror: %q, %v full passes", name, passes(t, e.reg, "full"))
	}
}

// A node deleted from Ironic is marked missing by the next full pass.
func TestDeletedNodeMissingAtTheNextFullPass(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(3, "baremetal-gold")
	ns, _, clk := incSync(t, e, Config{FullSyncInterval: time.Minute})
	syncOnce(t, ns)
	if err := e.ir.DeleteNode(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(30 * time.Second)
	syncOnce(t, ns) // a pass of changes: a deletion leaves nothing to list
	clk.t = clk.t.Add(30 * time.Second)
	syncOnce(t, ns)
	if _, _, missing := mirrored(t, e, ids[0]); !missing || passes(t, e.reg, "full") != 2 {
		t.Fatalf("deleted node: missing %v after %v full passes", missing, passes(t, e.reg, "full"))
	}
	if _, _, missing := mirrored(t, e, ids[1]); missing {
		t.Fatal("a node still in Ironic is marked missing")
	}
}

// On a database that sorts nulls last (PostgreSQL), the nodes never
// updated come first in a listing by updated_at, newest first, and the
// pagination skips changed nodes behind them: the pass lists every node.
func TestNullsFirstListingFallsBackToFull(t *testing.T) {
	e := newEnv(t, sim.Options{NullsLast: true})
	ids := e.sim.SeedNodes(3, "baremetal-gold")
	e.sim.Seed([]sim.NodeSpec{{Name: "never-updated", ProvisionState: "enroll"}})
	ns, _, _ := incSync(t, e, Config{ChangeMargin: time.Nanosecond})
	syncOnce(t, ns)
	e.sim.RenameNodeAt(ids[0], "changed", time.Now())
	syncOnce(t, ns)
	if name, _, _ := mirrored(t, e, ids[0]); name != "changed" || passes(t, e.reg, "full") != 2 {
		t.Fatalf("changed node mirrored as %q after %v full passes", name, passes(t, e.reg, "full"))
	}
}

// A peer that stopped leading starts its next term with a full pass.
func TestNewTermStartsWithAFullPass(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.sim.SeedNodes(2, "baremetal-gold")
	ns, _, _ := incSync(t, e, Config{})
	syncOnce(t, ns)
	syncOnce(t, ns)
	ns.forgetPasses()
	syncOnce(t, ns)
	if full, changes := passes(t, e.reg, "full"), passes(t, e.reg, "changes"); full != 2 || changes != 1 {
		t.Fatalf("passes: %v full, %v of changes; want 2 and 1", full, changes)
	}
}

func TestConfigRejectsNegativeFullSyncInterval(t *testing.T) {
	e := newEnv(t, sim.Options{})
	for _, cfg := range []Config{{FullSyncInterval: -time.Second}, {ChangeMargin: -time.Second}} {
		if _, err := New(e.c, settingsOf{}, e.ir, cfg); err == nil {
			t.Fatalf("config %+v accepted", cfg)
		}
	}
	ns, err := New(e.c, settingsOf{}, e.ir, Config{})
	if err != nil || ns.cfg.FullSyncInterval != DefaultFullSyncInterval || ns.cfg.ChangeMargin != DefaultChangeMargin {
		t.Fatalf("defaults: %+v, %v", ns.cfg, err)
	}
}

// The watermark is when Ironic answered the pass's first listing; without
// a Date header, the latest timestamp listed. A node stamped ahead of
// Ironic's API clock by more than the margin is reported.
func TestNextWatermark(t *testing.T) {
	e := newEnv(t, sim.Options{})
	logs := &logBuffer{}
	ns, err := New(e.c, settingsOf{}, e.ir, Config{ChangeMargin: time.Minute, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	nodes := []ironic.Node{{UUID: "a", CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-10 * time.Minute)}, {UUID: "b", CreatedAt: t0.Add(-5 * time.Minute)}}
	ns.watermark = t0.Add(-time.Minute)
	for _, tc := range []struct {
		asOf time.Time
		full bool
		want time.Time
	}{
		{t0, false, t0},
		{time.Time{}, true, t0.Add(-5 * time.Minute)},
		{time.Time{}, false, t0.Add(-time.Minute)},
	} {
		if got := ns.nextWatermark(tc.asOf, latestOf(nodes), tc.full); !got.Equal(tc.want) {
			t.Errorf("nextWatermark(%v, full %v) = %v, want %v", tc.asOf, tc.full, got, tc.want)
		}
	}
	if strings.Contains(logs.String(), "clocks") {
		t.Fatalf("no node is ahead, but: %s", logs.String())
	}
	ahead := append(nodes, ironic.Node{UUID: "c", CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(2 * time.Minute)})
	if got := ns.nextWatermark(t0, latestOf(ahead), false); !got.Equal(t0) || !strings.Contains(logs.String(), "synchronize the clocks of Ironic's hosts") {
		t.Fatalf("a node two minutes ahead: watermark %v, log %s", got, logs.String())
	}
	ns.nextWatermark(t0, latestOf(ahead), false)
	if n := strings.Count(logs.String(), "synchronize the clocks"); n != 1 {
		t.Fatalf("the clock difference is logged %d times in one full sync interval, want once", n)
	}
}

// latestOf is the latest created_at or updated_at of nodes.
func latestOf(nodes []ironic.Node) (w time.Time) {
	for _, n := range nodes {
		w = latestChange(w, n)
	}
	return w
}

// A brief full pass (?fields= and the allocations apart) mirrors what a
// detailed one does, and the passes of changes follow it.
func TestBriefFullPassMirrorsTheSame(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(5, "baremetal-gold", "CUSTOM_RACK_A")
	ctx := context.Background()
	a, err := e.ir.CreateAllocation(ctx, ironic.AllocationRequest{ResourceClass: "baremetal-gold", CandidateNodes: []string{ids[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ir.WaitAllocation(ctx, a.UUID); err != nil {
		t.Fatal(err)
	}
	if err := e.ir.ReserveNode(ctx, ids[3], "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"); err != nil {
		t.Fatal(err)
	}
	brief, _, _ := incSync(t, e, Config{BriefFullPass: true, ChangeMargin: time.Nanosecond})
	syncOnce(t, brief)
	detailed := &env{sim: e.sim, ir: e.ir, c: newFakeCluster(), reg: prometheus.NewRegistry()}
	syncOnce(t, detailed.sync(t, settingsOf{}, Config{}))
	got, want := e.c.store.Nodes(), detailed.c.store.Nodes()
	if len(got) != len(want) || len(got) != 5 {
		t.Fatalf("brief pass mirrored %d nodes, detailed %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].SameObservation(want[i]) {
			t.Fatalf("brief %+v\ndetailed %+v", got[i], want[i])
		}
	}
	if n, _ := e.c.store.Node(ids[1]); n.AllocationUUID != a.UUID {
		t.Fatalf("allocated node mirrored with allocation %q, want %s", n.AllocationUUID, a.UUID)
	}
	e.sim.RenameNodeAt(ids[0], "after-brief", time.Now())
	syncOnce(t, brief)
	if name, _, _ := mirrored(t, e, ids[0]); name != "after-brief" || passes(t, e.reg, "changes") != 1 {
		t.Fatalf("after a brief full pass: %q, %v passes of changes", name, passes(t, e.reg, "changes"))
	}
}
