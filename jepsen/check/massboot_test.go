package check

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

// massVerdict runs every checker on the synthetic run.
func massVerdict(t *testing.T, m *historytest.MassRun) Verdict {
	t.Helper()
	return All(Input{Ops: m.H.Ops, Final: m.FS, Waves: m.Waves, Recovery: time.Second, VizDir: t.TempDir(),
		Run: RunInfo{Started: "test", Workload: history.WorkloadMassBoot, Nodes: 2}, Timeout: 10 * time.Second})
}

// wantMass asserts that the run is invalid and that kind was reported, by
// the mass-boot checker or by the final-state checker.
func wantMass(t *testing.T, m *historytest.MassRun, kind string) {
	t.Helper()
	v := massVerdict(t, m)
	if v.Valid {
		t.Fatalf("verdict valid, want %s", kind)
	}
	if v.MassBoot.Counts[kind] == 0 && v.Final.Counts[kind] == 0 {
		t.Fatalf("no %s anomaly; mass boot: %+v; final: %+v", kind, v.MassBoot.Anomalies, v.Final.Anomalies)
	}
	if v.ExitCode() != 1 {
		t.Fatalf("exit code %d, want 1", v.ExitCode())
	}
}

func TestMassBootCleanRunIsValid(t *testing.T) {
	v := massVerdict(t, historytest.NewMassRun())
	if !v.Valid {
		t.Fatalf("clean run invalid: linearizable %+v; final %+v; mass boot %+v", v.Linearizable.Illegal, v.Final.Anomalies, v.MassBoot)
	}
	m := v.MassBoot
	if m.Sent != 6 || m.Active != 4 || m.NoValidHost != 2 || m.Waves != 2 || m.Contended != 2 {
		t.Fatalf("counts: %s", m.Summary())
	}
}

func TestMassBootNoWave(t *testing.T) {
	m := historytest.NewMassRun()
	m.Waves = nil
	wantMass(t, m, "no-wave")
}

func TestMassBootDoubleBookedInCorral(t *testing.T) {
	m := historytest.NewMassRun()
	m.Waves[0].Snapshots[0].Servers[1].Node = historytest.MassN1 // both ACTIVE servers show node 1
	wantMass(t, m, "double-booked-node")
}

func TestMassBootDoubleBookedInIronic(t *testing.T) {
	m := historytest.NewMassRun()
	s := &m.Waves[1].Snapshots[0]
	s.Allocations = append(s.Allocations, client.IronicAllocation{UUID: historytest.MassID(2, 2), NodeUUID: historytest.Ptr(historytest.MassN1), State: "active"})
	wantMass(t, m, "ironic-double-booked-node")
}

func TestMassBootDoubleBookedAcrossViews(t *testing.T) {
	m := historytest.NewMassRun()
	// Corral says server 0 is ACTIVE on node 1; Ironic gives node 1 to
	// server 2, live (in ERROR) in corral's list.
	m.Waves[0].Snapshots[0].Nodes[0].InstanceUUID = historytest.Ptr(historytest.MassID(1, 2))
	wantMass(t, m, "double-booked-node")
	// To a server corral does not list: a mismatch.
	m = historytest.NewMassRun()
	m.Waves[0].Snapshots[0].Nodes[0].InstanceUUID = historytest.Ptr("someone-else")
	wantMass(t, m, "node-mismatch")
}

func TestMassBootServerOnTwoIronicNodes(t *testing.T) {
	m := historytest.NewMassRun()
	m.Waves[1].Snapshots[0].Nodes[1].InstanceUUID = historytest.Ptr(historytest.MassID(2, 0))
	wantMass(t, m, "ironic-server-multi-node")
}

func TestMassBootActiveExceedsNodes(t *testing.T) {
	m := historytest.NewMassRun()
	m.Waves[0].Snapshots[0].Servers[2] = history.ServerState{ID: historytest.MassID(1, 2), Name: historytest.MassName(1, 2), Status: "ACTIVE", Host: "n1"}
	wantMass(t, m, "active-exceeds-nodes")

	m = historytest.NewMassRun()
	extra := history.ServerState{ID: "x", Name: "x", Status: "ACTIVE"}
	m.FS.Servers = append(m.FS.Servers, extra)
	v := massVerdict(t, m)
	if v.MassBoot.Counts["active-exceeds-nodes"] != 1 || v.Valid {
		t.Fatalf("3 ACTIVE on 2 nodes in the final state passed: %+v", v.MassBoot.Anomalies)
	}
}

func TestMassBootNoValidHostWithFreeNode(t *testing.T) {
	// A third node, free before the wave and untouched at its snapshot,
	// while a boot was refused for want of a node.
	m := historytest.NewMassRun()
	w := &m.Waves[1]
	w.FreeAtStart = append(w.FreeAtStart, history.NodeStamp{UUID: "node-3", Updated: historytest.Stamp0})
	idle := client.IronicNode{UUID: "node-3", ProvisionState: "available", PowerState: historytest.Ptr("power off"), UpdatedAt: historytest.Ptr(historytest.Stamp0)}
	w.Snapshots[0].Nodes = append(w.Snapshots[0].Nodes, idle)
	m.FS.IronicNodes = append(m.FS.IronicNodes, idle)
	wantMass(t, m, "no-valid-host-with-free-nodes")

	// The same node, touched during the wave (taken and given back): the
	// refusal may have come while it was taken, so it is not flagged.
	m = historytest.NewMassRun()
	w = &m.Waves[1]
	w.FreeAtStart = append(w.FreeAtStart, history.NodeStamp{UUID: "node-3", Updated: historytest.Stamp0})
	touched := idle
	touched.UpdatedAt = historytest.Ptr("2026-11-30T10:02:00.500000+00:00")
	w.Snapshots[0].Nodes = append(w.Snapshots[0].Nodes, touched)
	m.FS.IronicNodes = append(m.FS.IronicNodes, touched)
	if v := massVerdict(t, m); !v.Valid {
		t.Fatalf("a refusal while the spare node was busy was flagged: %+v", v.MassBoot.Anomalies)
	}

	// Without updated_at nothing can be concluded: a note, not an anomaly.
	m = historytest.NewMassRun()
	m.Waves[1].FreeAtStart[0].Updated = ""
	v := massVerdict(t, m)
	if !v.Valid || len(v.MassBoot.Notes) == 0 {
		t.Fatalf("want valid with a note, got %+v", v.MassBoot)
	}
}

func TestMassBootAllocationMismatch(t *testing.T) {
	m := historytest.NewMassRun()
	m.FS.Reservations[0].AllocationUUID = "gone" // corral names an allocation Ironic lacks
	wantMass(t, m, "allocation-mismatch")

	m = historytest.NewMassRun()
	m.FS.Allocations[1].NodeUUID = historytest.Ptr(historytest.MassN1) // Ironic put it elsewhere
	wantMass(t, m, "allocation-mismatch")

	m = historytest.NewMassRun()
	m.FS.Reservations = m.FS.Reservations[:1] // Ironic holds an allocation corral does not know
	wantMass(t, m, "allocation-mismatch")
}

func TestMassBootLostAcknowledgedBoot(t *testing.T) {
	m := historytest.NewMassRun()
	// An acknowledged boot of wave 2 is absent from the final listing.
	var servers []history.ServerState
	for _, s := range m.FS.Servers {
		if s.ID != historytest.MassID(2, 2) {
			servers = append(servers, s)
		}
	}
	m.FS.Servers = servers
	wantMass(t, m, "lost-boot")
}

func TestMassBootDeletedWithoutDelete(t *testing.T) {
	m := historytest.NewMassRun()
	m.FS.Servers[5].Status = "DELETED" // wave 2's refused server, never deleted
	for p := range m.FS.Views {
		m.FS.Views[p] = m.FS.Views[p][:2]
	}
	wantMass(t, m, "lost-boot")
}

func TestMassBootFailedBootExists(t *testing.T) {
	m := historytest.NewMassRun()
	m.H.BootAs(100, historytest.MassName(2, 3), history.Fail, 400) // "nothing was created"
	s := history.ServerState{ID: "phantom", Name: historytest.MassName(2, 3), Status: "ERROR",
		Fault: "No valid host was found."}
	m.FS.Servers = append(m.FS.Servers, s)
	for p := range m.FS.Views {
		m.FS.Views[p] = append(m.FS.Views[p], s)
	}
	wantMass(t, m, "failed-boot-applied")
}

func TestMassBootStuckInBuild(t *testing.T) {
	m := historytest.NewMassRun()
	m.FS.Servers[3].Status = "BUILD"
	for p := range m.FS.Views {
		m.FS.Views[p][0].Status = "BUILD"
	}
	m.FS.Quiesced = false
	wantMass(t, m, "stuck")
}

func TestMassBootDeletedServerHoldsNode(t *testing.T) {
	m := historytest.NewMassRun()
	// A deleted server of wave 1 still holds a node in Ironic.
	m.FS.IronicNodes = append(m.FS.IronicNodes, client.IronicNode{UUID: "node-3", ProvisionState: "active",
		PowerState: historytest.Ptr("power on"), InstanceUUID: historytest.Ptr(historytest.MassID(1, 0)), AllocationUUID: historytest.Ptr(historytest.MassID(1, 0))})
	m.FS.Allocations = append(m.FS.Allocations, client.IronicAllocation{UUID: historytest.MassID(1, 0), NodeUUID: historytest.Ptr("node-3"), State: "active"})
	wantMass(t, m, "ironic-leak")
	// And in corral's reservations.
	m = historytest.NewMassRun()
	m.FS.Reservations = append(m.FS.Reservations, history.Reservation{NodeUUID: "node-3", ServerID: historytest.MassID(1, 1), Host: "n1"})
	wantMass(t, m, "reservation-leak")
}

func TestMassBootAnomalyAfterTheHold(t *testing.T) {
	// The first snapshot is clean; the one after the hold (faults went on)
	// shows two live servers on one node.
	m := historytest.NewMassRun()
	w := &m.Waves[1]
	later := w.Snapshots[0]
	later.Servers = append([]history.ServerState(nil), later.Servers...)
	later.Servers[1].Node = historytest.MassN1
	w.Snapshots = append(w.Snapshots, later)
	wantMass(t, m, "double-booked-node")
}
