package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// counter reads a counter from the injected registry (-1: not registered).
func counter(t *testing.T, e *env, name string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// clock is a leader clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func waitNode(t *testing.T, s *sim.Server, id string, ok func(sim.NodeState) bool) sim.NodeState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, n := range s.Nodes() {
			if n.UUID == id && ok(n) {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s never reached the expected state: %+v", id, s.Nodes())
		}
		time.Sleep(10 * time.Millisecond) // polling the simulator, not waiting for a duration
	}
}

func state(s *sim.Server, id string) sim.NodeState {
	for _, n := range s.Nodes() {
		if n.UUID == id {
			return n
		}
	}
	return sim.NodeState{}
}

// A node deployed with neither an allocation nor an instance_uuid (an
// owner paused between its last check and its deploy sent it for a
// server that had moved on) is undeployed by the leader once it has seen
// it so for the grace period across its syncs; nodes held by an instance
// and nodes in maintenance are left alone.
func TestReaperUndeploysNodesDeployedForNobody(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	ids := e.sim.Seed([]sim.NodeSpec{
		{ResourceClass: "gold"}, // becomes the orphan
		{ResourceClass: "gold"}, // deployed for an instance
		{ResourceClass: "gold", ProvisionState: "active", Maintenance: true},
	})
	orphanID, heldID, maintID := ids[0], ids[1], ids[2]
	if err := e.ir.ReserveNode(ctx, heldID, "5f1d1f5e-8f0a-4b7a-9a57-9b8d1c3f7a10"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{orphanID, heldID} {
		if err := e.ir.Deploy(ctx, id, ironic.DeploySpec{ImageSource: "img", DisplayName: "late"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ir.WaitProvisionState(ctx, id, ironic.StateActive); err != nil {
			t.Fatal(err)
		}
	}
	clk := &clock{t: time.Unix(1_000_000, 0)}
	ns := e.sync(t, settingsOf{}, Config{Interval: time.Second, OrphanGrace: 10 * time.Second})
	ns.now = clk.now

	syncOnce(t, ns) // first seen
	clk.t = clk.t.Add(9 * time.Second)
	syncOnce(t, ns) // within the grace
	if st := state(e.sim, orphanID); st.ProvisionState != "active" {
		t.Fatalf("orphan undeployed within its grace: %s", st.ProvisionState)
	}
	if got := counter(t, e, "corral_ironic_orphans_undeployed_total"); got != 0 {
		t.Fatalf("orphans counted within the grace: %v", got)
	}
	clk.t = clk.t.Add(time.Second)
	syncOnce(t, ns)
	waitNode(t, e.sim, orphanID, func(n sim.NodeState) bool { return n.ProvisionState == "available" })
	if got := counter(t, e, "corral_ironic_orphans_undeployed_total"); got != 1 {
		t.Fatalf("corral_ironic_orphans_undeployed_total = %v, want 1", got)
	}
	if st := state(e.sim, heldID); st.ProvisionState != "active" || st.InstanceUUID == "" {
		t.Fatalf("a node held by an instance was touched: %+v", st)
	}
	if st := state(e.sim, maintID); st.ProvisionState != "active" {
		t.Fatalf("a node in maintenance was touched: %+v", st)
	}
}

// The grace counts from the first sync that saw the node deployed for
// nobody without interruption: a node that gets a reservation meanwhile,
// or a leader that lost leadership, starts again.
func TestReaperGraceRestarts(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ctx := context.Background()
	id := e.sim.Seed([]sim.NodeSpec{{ResourceClass: "gold", ProvisionState: "active"}})[0]
	clk := &clock{t: time.Unix(1_000_000, 0)}
	ns := e.sync(t, settingsOf{}, Config{Interval: time.Second, OrphanGrace: 10 * time.Second})
	ns.now = clk.now
	syncOnce(t, ns)
	// A reservation appears and goes: the grace starts again.
	inst := "7d7c0a52-50a3-4bd6-a6d5-1fa1b8d3b0d2"
	if err := e.ir.ReserveNode(ctx, id, inst); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(5 * time.Second)
	syncOnce(t, ns)
	if err := e.ir.ReleaseNode(ctx, id, inst); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(6 * time.Second)
	syncOnce(t, ns) // seen for nobody again: first sight
	clk.t = clk.t.Add(9 * time.Second)
	syncOnce(t, ns)
	// Leadership lost and regained: what the former term saw is dropped.
	ns.forgetOrphans()
	clk.t = clk.t.Add(5 * time.Second)
	syncOnce(t, ns)
	if st := state(e.sim, id); st.ProvisionState != "active" {
		t.Fatalf("undeployed although never seen for nobody for 10 s in a row: %s", st.ProvisionState)
	}
	clk.t = clk.t.Add(10 * time.Second)
	syncOnce(t, ns)
	waitNode(t, e.sim, id, func(n sim.NodeState) bool { return n.ProvisionState == "available" })
}

// A negative grace turns the reaper of orphans off.
func TestReaperOff(t *testing.T) {
	e := newEnv(t, sim.Options{})
	id := e.sim.Seed([]sim.NodeSpec{{ResourceClass: "gold", ProvisionState: "active"}})[0]
	clk := &clock{t: time.Unix(1_000_000, 0)}
	ns := e.sync(t, settingsOf{}, Config{OrphanGrace: -1})
	ns.now = clk.now
	for range 3 {
		syncOnce(t, ns)
		clk.t = clk.t.Add(time.Hour)
	}
	if st := state(e.sim, id); st.ProvisionState != "active" {
		t.Fatalf("undeployed with the reaper off: %s", st.ProvisionState)
	}
}
