package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// massRun is a synthetic mass-boot run on two nodes: two waves of three
// boots each; two become ACTIVE, the third is refused ("No valid host")
// because both nodes are taken. Wave 1 is deleted, wave 2 stays.
type massRun struct {
	h     *hist
	waves []Wave
	fs    FinalState
}

const (
	massN1 = "node-1"
	massN2 = "node-2"
	stamp0 = "2026-11-30T10:00:00.000000+00:00"
)

func massID(wave, i int) string { return fmt.Sprintf("w%d-server-%d", wave, i) }

func massName(wave, i int) string { return fmt.Sprintf("%s%03d", prefix(wave), i) }

// massServers is what a wave's settled list shows.
func massServers(wave int) []ServerState {
	return []ServerState{
		{ID: massID(wave, 0), Name: massName(wave, 0), Status: "ACTIVE", Host: "n1", Node: massN1},
		{ID: massID(wave, 1), Name: massName(wave, 1), Status: "ACTIVE", Host: "n2", Node: massN2},
		{ID: massID(wave, 2), Name: massName(wave, 2), Status: "ERROR",
			Fault: "No valid host was found. Ironic: Failed to process allocation: no available nodes match the resource class baremetal-jepsen."},
	}
}

// heldNodes is Ironic with both nodes given to the wave's ACTIVE servers.
func heldNodes(wave int, updated string) ([]IronicNode, []IronicAllocation) {
	var nodes []IronicNode
	var allocs []IronicAllocation
	for i, n := range []string{massN1, massN2} {
		id := massID(wave, i)
		nodes = append(nodes, IronicNode{UUID: n, ProvisionState: "active", PowerState: ptr("power on"),
			InstanceUUID: ptr(id), AllocationUUID: ptr(id), UpdatedAt: ptr(updated)})
		allocs = append(allocs, IronicAllocation{UUID: id, NodeUUID: ptr(n), State: "active"})
	}
	return nodes, allocs
}

func freeStamps() []NodeStamp {
	return []NodeStamp{{UUID: massN1, Updated: stamp0}, {UUID: massN2, Updated: stamp0}}
}

func newMassRun() *massRun {
	m := &massRun{h: &hist{}}
	p := 0
	for wave := 1; wave <= 2; wave++ {
		w := Wave{Number: wave, Start: m.h.t, Sent: 3, Accepted: 3, FreeAtStart: freeStamps(), Settled: true}
		for i := 0; i < 3; i++ {
			p++
			m.h.boot(p, massName(wave, i), massID(wave, i))
		}
		p++
		m.h.list(p, massServers(wave)...)
		nodes, allocs := heldNodes(wave, fmt.Sprintf("2026-11-30T10:0%d:01.000000+00:00", wave))
		w.Snapshots = []Snap{{Time: m.h.t, Servers: massServers(wave), Nodes: nodes, Allocations: allocs}}
		if wave == 1 {
			for i := 0; i < 3; i++ {
				p++
				m.h.del(p, massID(wave, i), massName(wave, i), OK, 204)
				w.DeletesSent++
				w.DeletesOK++
			}
			p++
			m.h.list(p)
		} else {
			w.Kept = true
		}
		w.End = m.h.t
		m.waves = append(m.waves, w)
	}
	live := massServers(2)
	m.fs = FinalState{
		Views:    map[string][]ServerState{"n1": live, "n2": live},
		Owners:   map[string]OwnerView{},
		Hosts:    []HostView{{Name: "n1", Status: "up"}, {Name: "n2", Status: "up"}},
		Running:  map[string]bool{"n1": true, "n2": true},
		Quiesced: true,
	}
	for i := 0; i < 3; i++ {
		m.fs.Servers = append(m.fs.Servers, ServerState{ID: massID(1, i), Name: massName(1, i), Status: "DELETED"})
	}
	m.fs.Servers = append(m.fs.Servers, live...)
	for _, s := range live {
		m.fs.Owners[s.ID] = OwnerView{ServerID: s.ID, Host: s.Host, HostUp: true, Status: s.Status, Node: s.Node}
		if s.Node != "" {
			m.fs.Reservations = append(m.fs.Reservations, Reservation{NodeUUID: s.Node, ServerID: s.ID, Host: s.Host, AllocationUUID: s.ID})
		}
	}
	m.fs.IronicNodes, m.fs.Allocations = heldNodes(2, "2026-11-30T10:02:01.000000+00:00")
	return m
}

func (m *massRun) verdict(t *testing.T) Verdict {
	t.Helper()
	return checkAll(m.h.ops, m.fs, nil, m.waves, EffectLog{}, time.Second, "", "", nil, t.TempDir(),
		RunInfo{Started: "test", Workload: WorkloadMassBoot, Nodes: 2}, 10*time.Second)
}

// wantMass asserts that the run is invalid and that kind was reported, by
// the mass-boot checker or by the final-state checker.
func wantMass(t *testing.T, m *massRun, kind string) {
	t.Helper()
	v := m.verdict(t)
	if v.Valid {
		t.Fatalf("verdict valid, want %s", kind)
	}
	if v.MassBoot.Counts[kind] == 0 && v.Final.Counts[kind] == 0 {
		t.Fatalf("no %s anomaly; mass boot: %+v; final: %+v", kind, v.MassBoot.Anomalies, v.Final.Anomalies)
	}
	if exitCode(v) != 1 {
		t.Fatalf("exit code %d, want 1", exitCode(v))
	}
}

func TestMassBootCleanRunIsValid(t *testing.T) {
	v := newMassRun().verdict(t)
	if !v.Valid {
		t.Fatalf("clean run invalid: linearizable %+v; final %+v; mass boot %+v", v.Linearizable.Illegal, v.Final.Anomalies, v.MassBoot)
	}
	m := v.MassBoot
	if m.Sent != 6 || m.Active != 4 || m.NoValidHost != 2 || m.Waves != 2 || m.Contended != 2 {
		t.Fatalf("counts: %s", massSummary(m))
	}
}

func TestMassBootNoWave(t *testing.T) {
	m := newMassRun()
	m.waves = nil
	wantMass(t, m, "no-wave")
}

func TestMassBootDoubleBookedInCorral(t *testing.T) {
	m := newMassRun()
	m.waves[0].Snapshots[0].Servers[1].Node = massN1 // both ACTIVE servers show node 1
	wantMass(t, m, "double-booked-node")
}

func TestMassBootDoubleBookedInIronic(t *testing.T) {
	m := newMassRun()
	s := &m.waves[1].Snapshots[0]
	s.Allocations = append(s.Allocations, IronicAllocation{UUID: massID(2, 2), NodeUUID: ptr(massN1), State: "active"})
	wantMass(t, m, "ironic-double-booked-node")
}

func TestMassBootDoubleBookedAcrossViews(t *testing.T) {
	m := newMassRun()
	// Corral says server 0 is ACTIVE on node 1; Ironic gives node 1 to
	// server 2, live (in ERROR) in corral's list.
	m.waves[0].Snapshots[0].Nodes[0].InstanceUUID = ptr(massID(1, 2))
	wantMass(t, m, "double-booked-node")
	// To a server corral does not list: a mismatch.
	m = newMassRun()
	m.waves[0].Snapshots[0].Nodes[0].InstanceUUID = ptr("someone-else")
	wantMass(t, m, "node-mismatch")
}

func TestMassBootServerOnTwoIronicNodes(t *testing.T) {
	m := newMassRun()
	m.waves[1].Snapshots[0].Nodes[1].InstanceUUID = ptr(massID(2, 0))
	wantMass(t, m, "ironic-server-multi-node")
}

func TestMassBootActiveExceedsNodes(t *testing.T) {
	m := newMassRun()
	m.waves[0].Snapshots[0].Servers[2] = ServerState{ID: massID(1, 2), Name: massName(1, 2), Status: "ACTIVE", Host: "n1"}
	wantMass(t, m, "active-exceeds-nodes")

	m = newMassRun()
	extra := ServerState{ID: "x", Name: "x", Status: "ACTIVE"}
	m.fs.Servers = append(m.fs.Servers, extra)
	v := m.verdict(t)
	if v.MassBoot.Counts["active-exceeds-nodes"] != 1 || v.Valid {
		t.Fatalf("3 ACTIVE on 2 nodes in the final state passed: %+v", v.MassBoot.Anomalies)
	}
}

func TestMassBootNoValidHostWithFreeNode(t *testing.T) {
	// A third node, free before the wave and untouched at its snapshot,
	// while a boot was refused for want of a node.
	m := newMassRun()
	w := &m.waves[1]
	w.FreeAtStart = append(w.FreeAtStart, NodeStamp{UUID: "node-3", Updated: stamp0})
	idle := IronicNode{UUID: "node-3", ProvisionState: "available", PowerState: ptr("power off"), UpdatedAt: ptr(stamp0)}
	w.Snapshots[0].Nodes = append(w.Snapshots[0].Nodes, idle)
	m.fs.IronicNodes = append(m.fs.IronicNodes, idle)
	wantMass(t, m, "no-valid-host-with-free-nodes")

	// The same node, touched during the wave (taken and given back): the
	// refusal may have come while it was taken, so it is not flagged.
	m = newMassRun()
	w = &m.waves[1]
	w.FreeAtStart = append(w.FreeAtStart, NodeStamp{UUID: "node-3", Updated: stamp0})
	touched := idle
	touched.UpdatedAt = ptr("2026-11-30T10:02:00.500000+00:00")
	w.Snapshots[0].Nodes = append(w.Snapshots[0].Nodes, touched)
	m.fs.IronicNodes = append(m.fs.IronicNodes, touched)
	if v := m.verdict(t); !v.Valid {
		t.Fatalf("a refusal while the spare node was busy was flagged: %+v", v.MassBoot.Anomalies)
	}

	// Without updated_at nothing can be concluded: a note, not an anomaly.
	m = newMassRun()
	m.waves[1].FreeAtStart[0].Updated = ""
	v := m.verdict(t)
	if !v.Valid || len(v.MassBoot.Notes) == 0 {
		t.Fatalf("want valid with a note, got %+v", v.MassBoot)
	}
}

func TestMassBootAllocationMismatch(t *testing.T) {
	m := newMassRun()
	m.fs.Reservations[0].AllocationUUID = "gone" // corral names an allocation Ironic lacks
	wantMass(t, m, "allocation-mismatch")

	m = newMassRun()
	m.fs.Allocations[1].NodeUUID = ptr(massN1) // Ironic put it elsewhere
	wantMass(t, m, "allocation-mismatch")

	m = newMassRun()
	m.fs.Reservations = m.fs.Reservations[:1] // Ironic holds an allocation corral does not know
	wantMass(t, m, "allocation-mismatch")
}

func TestMassBootLostAcknowledgedBoot(t *testing.T) {
	m := newMassRun()
	// An acknowledged boot of wave 2 is absent from the final listing.
	var servers []ServerState
	for _, s := range m.fs.Servers {
		if s.ID != massID(2, 2) {
			servers = append(servers, s)
		}
	}
	m.fs.Servers = servers
	wantMass(t, m, "lost-boot")
}

func TestMassBootDeletedWithoutDelete(t *testing.T) {
	m := newMassRun()
	m.fs.Servers[5].Status = "DELETED" // wave 2's refused server, never deleted
	for p := range m.fs.Views {
		m.fs.Views[p] = m.fs.Views[p][:2]
	}
	wantMass(t, m, "lost-boot")
}

func TestMassBootFailedBootExists(t *testing.T) {
	m := newMassRun()
	m.h.bootAs(100, massName(2, 3), Fail, 400) // "nothing was created"
	s := ServerState{ID: "phantom", Name: massName(2, 3), Status: "ERROR",
		Fault: "No valid host was found."}
	m.fs.Servers = append(m.fs.Servers, s)
	for p := range m.fs.Views {
		m.fs.Views[p] = append(m.fs.Views[p], s)
	}
	wantMass(t, m, "failed-boot-applied")
}

func TestMassBootStuckInBuild(t *testing.T) {
	m := newMassRun()
	m.fs.Servers[3].Status = "BUILD"
	for p := range m.fs.Views {
		m.fs.Views[p][0].Status = "BUILD"
	}
	m.fs.Quiesced = false
	wantMass(t, m, "stuck")
}

func TestMassBootDeletedServerHoldsNode(t *testing.T) {
	m := newMassRun()
	// A deleted server of wave 1 still holds a node in Ironic.
	m.fs.IronicNodes = append(m.fs.IronicNodes, IronicNode{UUID: "node-3", ProvisionState: "active",
		PowerState: ptr("power on"), InstanceUUID: ptr(massID(1, 0)), AllocationUUID: ptr(massID(1, 0))})
	m.fs.Allocations = append(m.fs.Allocations, IronicAllocation{UUID: massID(1, 0), NodeUUID: ptr("node-3"), State: "active"})
	wantMass(t, m, "ironic-leak")
	// And in corral's reservations.
	m = newMassRun()
	m.fs.Reservations = append(m.fs.Reservations, Reservation{NodeUUID: "node-3", ServerID: massID(1, 1), Host: "n1"})
	wantMass(t, m, "reservation-leak")
}

func TestMassBootReportAndRecheckFiles(t *testing.T) {
	m := newMassRun()
	m.waves[0].Snapshots[0].Servers[1].Node = massN1
	dir := t.TempDir()
	v := m.verdict(t)
	if err := writeResults(dir, v, m.h.ops, nil, m.waves, false); err != nil {
		t.Fatal(err)
	}
	var waves []Wave
	if err := readJSON(dir+"/waves.json", &waves); err != nil || len(waves) != 2 {
		t.Fatalf("waves.json: %v, %d waves", err, len(waves))
	}
	var report strings.Builder
	printSummary(&report, dir, v)
	if !strings.Contains(report.String(), "massboot: false") || !strings.Contains(report.String(), "INVALID") {
		t.Fatalf("summary: %s", report.String())
	}
}

func TestMassBootFlags(t *testing.T) {
	c, err := parseFlags([]string{"-workload", "massboot", "-nemesis", "kill"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes != 150 || c.WaveSize != 200 || c.Waves != 3 || c.OpTimeout != 20*time.Second {
		t.Fatalf("massboot defaults: %+v", c)
	}
	c, err = parseFlags([]string{"-workload", "massboot", "-nodes", "30", "-wave-size", "40"})
	if err != nil || c.Nodes != 30 || c.WaveSize != 40 {
		t.Fatalf("explicit flags lost: %v %+v", err, c)
	}
	if c, err = parseFlags(nil); err != nil || c.Workload != WorkloadMixed || c.Nodes != 48 {
		t.Fatalf("default workload changed: %v %+v", err, c)
	}
	if _, err := parseFlags([]string{"-workload", "bulk"}); err == nil {
		t.Fatal("an unknown workload was accepted")
	}
}

func TestMassBootAnomalyAfterTheHold(t *testing.T) {
	// The first snapshot is clean; the one after the hold (faults went on)
	// shows two live servers on one node.
	m := newMassRun()
	w := &m.waves[1]
	later := w.Snapshots[0]
	later.Servers = append([]ServerState(nil), later.Servers...)
	later.Servers[1].Node = massN1
	w.Snapshots = append(w.Snapshots, later)
	wantMass(t, m, "double-booked-node")
}
