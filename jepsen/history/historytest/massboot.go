package historytest

import (
	"fmt"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// MassRun is a synthetic mass-boot run on two nodes: two waves of three
// boots each; two become ACTIVE, the third is refused ("No valid host")
// because both nodes are taken. Wave 1 is deleted, wave 2 stays.
type MassRun struct {
	H     *Hist
	Waves []history.Wave
	FS    history.FinalState
}

// The two nodes of the mass-boot run, and the updated_at they had before
// every wave.
const (
	MassN1 = "node-1"
	MassN2 = "node-2"
	Stamp0 = "2026-11-30T10:00:00.000000+00:00"
)

// MassID is the id of the i-th server of a wave.
func MassID(wave, i int) string { return fmt.Sprintf("w%d-server-%d", wave, i) }

// MassName is the name the i-th boot of a wave used.
func MassName(wave, i int) string { return fmt.Sprintf("%s%03d", history.WavePrefix(wave), i) }

// MassServers is what a wave's settled list shows.
func MassServers(wave int) []history.ServerState {
	return []history.ServerState{
		{ID: MassID(wave, 0), Name: MassName(wave, 0), Status: "ACTIVE", Host: "n1", Node: MassN1},
		{ID: MassID(wave, 1), Name: MassName(wave, 1), Status: "ACTIVE", Host: "n2", Node: MassN2},
		{ID: MassID(wave, 2), Name: MassName(wave, 2), Status: "ERROR",
			Fault: "No valid host was found. Ironic: Failed to process allocation: no available nodes match the resource class baremetal-jepsen."},
	}
}

// HeldNodes is Ironic with both nodes given to the wave's ACTIVE servers.
func HeldNodes(wave int, updated string) ([]client.IronicNode, []client.IronicAllocation) {
	var nodes []client.IronicNode
	var allocs []client.IronicAllocation
	for i, n := range []string{MassN1, MassN2} {
		id := MassID(wave, i)
		nodes = append(nodes, client.IronicNode{UUID: n, ProvisionState: "active", PowerState: Ptr("power on"),
			InstanceUUID: Ptr(id), AllocationUUID: Ptr(id), UpdatedAt: Ptr(updated)})
		allocs = append(allocs, client.IronicAllocation{UUID: id, NodeUUID: Ptr(n), State: "active"})
	}
	return nodes, allocs
}

// FreeStamps is both nodes free before a wave, with one updated_at.
func FreeStamps() []history.NodeStamp {
	return []history.NodeStamp{{UUID: MassN1, Updated: Stamp0}, {UUID: MassN2, Updated: Stamp0}}
}

// NewMassRun is the clean run: every checker passes.
func NewMassRun() *MassRun {
	m := &MassRun{H: &Hist{}}
	p := 0
	for wave := 1; wave <= 2; wave++ {
		w := history.Wave{Number: wave, Start: m.H.T, Sent: 3, Accepted: 3, FreeAtStart: FreeStamps(), Settled: true}
		for i := 0; i < 3; i++ {
			p++
			m.H.Boot(p, MassName(wave, i), MassID(wave, i))
		}
		p++
		m.H.List(p, MassServers(wave)...)
		nodes, allocs := HeldNodes(wave, fmt.Sprintf("2026-11-30T10:0%d:01.000000+00:00", wave))
		w.Snapshots = []history.Snap{{Time: m.H.T, Servers: MassServers(wave), Nodes: nodes, Allocations: allocs}}
		if wave == 1 {
			for i := 0; i < 3; i++ {
				p++
				m.H.Del(p, MassID(wave, i), MassName(wave, i), history.OK, 204)
				w.DeletesSent++
				w.DeletesOK++
			}
			p++
			m.H.List(p)
		} else {
			w.Kept = true
		}
		w.End = m.H.T
		m.Waves = append(m.Waves, w)
	}
	live := MassServers(2)
	m.FS = history.FinalState{
		Views:    map[string][]history.ServerState{"n1": live, "n2": live},
		Owners:   map[string]history.Owner{},
		Hosts:    []history.Host{{Name: "n1", Status: "up"}, {Name: "n2", Status: "up"}},
		Running:  map[string]bool{"n1": true, "n2": true},
		Quiesced: true,
	}
	for i := 0; i < 3; i++ {
		m.FS.Servers = append(m.FS.Servers, history.ServerState{ID: MassID(1, i), Name: MassName(1, i), Status: "DELETED"})
	}
	m.FS.Servers = append(m.FS.Servers, live...)
	for _, s := range live {
		m.FS.Owners[s.ID] = history.Owner{ServerID: s.ID, Host: s.Host, HostUp: true, Status: s.Status, Node: s.Node}
		if s.Node != "" {
			m.FS.Reservations = append(m.FS.Reservations, history.Reservation{NodeUUID: s.Node, ServerID: s.ID, Host: s.Host, AllocationUUID: s.ID})
		}
	}
	m.FS.IronicNodes, m.FS.Allocations = HeldNodes(2, "2026-11-30T10:02:01.000000+00:00")
	return m
}
