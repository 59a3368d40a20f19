package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// MassResult is the verdict of the mass-boot checker: what each wave's
// snapshot and the final state say about node capacity. Lost and
// phantom boots, leaks, stuck builds and the final agreement of corral and
// Ironic are the final-state checker's (CheckFinal), which runs too.
type MassResult struct {
	Valid       bool           `json:"valid"`
	Waves       int            `json:"waves"`
	Nodes       int            `json:"ironic_nodes"`
	Sent        int            `json:"boots_sent"`
	Accepted    int            `json:"boots_accepted"`
	Failed      int            `json:"boots_failed"`
	Unknown     int            `json:"boots_unknown"`
	Active      int            `json:"active_at_snapshots"`        // the waves' own servers, summed
	Errors      int            `json:"error_at_snapshots"`         // the waves' own servers, summed
	NoValidHost int            `json:"no_valid_host_at_snapshots"` // ERROR servers refused for want of a node
	Building    int            `json:"build_at_snapshots"`
	Contended   int            `json:"contended_waves"` // waves in which some boot was refused for want of a node
	Counts      map[string]int `json:"anomaly_counts,omitempty"`
	Anomalies   []Anomaly      `json:"anomalies,omitempty"`
	Notes       []string       `json:"notes,omitempty"` // what could not be checked, and why
}

func (r *MassResult) add(kind, server, format string, args ...any) {
	r.Valid = false
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[kind]++
	if r.Counts[kind] <= 25 {
		r.Anomalies = append(r.Anomalies, Anomaly{Kind: kind, Server: server, Detail: fmt.Sprintf(format, args...)})
	}
}

func (r *MassResult) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// noValidHost reports whether an ERROR server was refused for want of a
// node ("No valid host was found", as Nova says).
func noValidHost(s history.ServerState) bool {
	return s.Status == "ERROR" && strings.Contains(s.Fault, "No valid host")
}

// MassBoot checks the waves' snapshots and the final state against
// the node capacity (nodes: the Ironic nodes of the run):
//
//   - no two live servers hold one node, in corral's list, in Ironic's
//     allocations, or across the two (an ACTIVE server's node names another
//     instance in Ironic); one server never holds two Ironic nodes;
//   - no more ACTIVE servers than nodes;
//   - a boot refused with "No valid host" while a node stayed free for the
//     whole wave is an anomaly (see waveCapacity);
//   - after the final heal, Ironic's allocations and corral's reservations
//     are the same set of (server, node, allocation).
func MassBoot(waves []history.Wave, nodes int, fs history.FinalState) MassResult {
	r := MassResult{Valid: true, Waves: len(waves), Nodes: nodes}
	if len(waves) == 0 {
		r.add("no-wave", "", "no wave ran: the workload tested nothing")
	}
	for _, w := range waves {
		r.Sent += w.Sent
		r.Accepted += w.Accepted
		r.Failed += w.Failed
		r.Unknown += w.Unknown
		r.checkWave(w, nodes)
	}
	r.checkFinal(fs, nodes)
	return r
}

func (r *MassResult) checkWave(w history.Wave, nodes int) {
	if !w.Settled {
		r.note("wave %d did not leave BUILD within the settle time (%s); its snapshot was taken anyway", w.Number, w.SettleError)
	}
	if len(w.Snapshots) == 0 {
		r.note("wave %d has no snapshot", w.Number)
	}
	flagged := false
	for i, s := range w.Snapshots {
		if i == 0 {
			before := r.NoValidHost
			r.count(w, s)
			if r.NoValidHost > before {
				r.Contended++
			}
		}
		r.checkSnap(w, i+1, s, nodes)
		if len(s.Errors) == 0 && s.Servers != nil && !flagged {
			flagged = r.waveCapacity(w, i+1, s)
		}
	}
}

// count adds the wave's own servers in its first snapshot to the totals.
func (r *MassResult) count(w history.Wave, s history.Snap) {
	for _, x := range s.Servers {
		if !strings.HasPrefix(x.Name, history.WavePrefix(w.Number)) {
			continue
		}
		switch {
		case x.Status == "ACTIVE":
			r.Active++
		case noValidHost(x):
			r.NoValidHost++
			r.Errors++
		case x.Status == "ERROR":
			r.Errors++
		case x.Status == "BUILD":
			r.Building++
		}
	}
}

// checkSnap checks what holds at any instant in one snapshot (the k-th
// of the wave).
func (r *MassResult) checkSnap(w history.Wave, k int, s history.Snap, nodes int) {
	for _, e := range s.Errors {
		r.note("wave %d snapshot %d: %s", w.Number, k, e)
	}
	if s.Servers == nil {
		r.note("wave %d snapshot %d: no linearizable list succeeded, corral's side is unchecked", w.Number, k)
		return
	}
	active := 0
	holders := map[string][]string{} // node → live servers showing it
	for _, x := range s.Servers {
		if x.Status == "DELETED" {
			continue
		}
		if x.Status == "ACTIVE" {
			active++
		}
		if x.Node != "" {
			holders[x.Node] = append(holders[x.Node], x.ID)
		}
	}
	if active > nodes {
		r.add("active-exceeds-nodes", "", "wave %d: %d servers ACTIVE at %s with only %d nodes", w.Number, active, secs(s.Time), nodes)
	}
	for _, n := range slices.Sorted(maps.Keys(holders)) {
		if len(holders[n]) > 1 {
			r.add("double-booked-node", strings.Join(holders[n], ","), "wave %d at %s: live servers %v all show node %s",
				w.Number, secs(s.Time), holders[n], n)
		}
	}
	if len(s.Errors) == 0 {
		r.checkWaveIronic(w, s)
	}
}

// checkWaveIronic: Ironic's allocations and instance_uuids never give a
// node twice, and agree with the ACTIVE servers of the snapshot. The
// Ironic read follows the list and no delete is sent in between, so an
// ACTIVE server still holds its node when Ironic is read.
func (r *MassResult) checkWaveIronic(w history.Wave, s history.Snap) {
	allocs := map[string][]string{}
	for _, a := range s.Allocations {
		if n := client.Str(a.NodeUUID); n != "" {
			allocs[n] = append(allocs[n], a.UUID)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(allocs)) {
		if len(allocs[n]) > 1 {
			r.add("ironic-double-booked-node", n, "wave %d at %s: Ironic node %s has %d allocations: %s", w.Number, secs(s.Time), n, len(allocs[n]), strings.Join(allocs[n], ","))
		}
	}
	byNode := map[string]client.IronicNode{}
	nodesOf := map[string][]string{}
	for _, n := range s.Nodes {
		byNode[n.UUID] = n
		if i := client.Str(n.InstanceUUID); i != "" {
			nodesOf[i] = append(nodesOf[i], n.UUID)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(nodesOf)) {
		if len(nodesOf[id]) > 1 {
			r.add("ironic-server-multi-node", id, "wave %d at %s: Ironic nodes %s all hold this instance", w.Number, secs(s.Time), strings.Join(nodesOf[id], ","))
		}
	}
	live := map[string]bool{}
	for _, x := range s.Servers {
		live[x.ID] = x.Status != "DELETED"
	}
	for _, x := range s.Servers {
		if x.Status != "ACTIVE" || x.Node == "" {
			continue
		}
		n, ok := byNode[x.Node]
		inst := client.Str(n.InstanceUUID)
		switch {
		case !ok:
			r.add("node-mismatch", x.ID, "wave %d at %s: ACTIVE server shows node %s, which Ironic does not list", w.Number, secs(s.Time), x.Node)
		case inst != x.ID && live[inst]:
			r.add("double-booked-node", x.ID+","+inst, "wave %d at %s: ACTIVE server %s shows node %s, which Ironic gives to live server %s",
				w.Number, secs(s.Time), x.ID, x.Node, inst)
		case inst != x.ID:
			r.add("node-mismatch", x.ID, "wave %d at %s: ACTIVE server shows node %s, whose instance_uuid in Ironic is %q (%s)",
				w.Number, secs(s.Time), x.Node, inst, n.ProvisionState)
		}
	}
}

// waveCapacity flags boots refused with "No valid host" while a node was
// free for the whole wave. Ironic's updated_at changes whenever anything
// is done to a node (an allocation, a claim, a provision or power state
// change): a node free before the first boot of the wave whose updated_at
// is unchanged at the snapshot, and which is still free, was free without
// interruption from before any boot of the wave until after every refusal
// the snapshot shows. Such a refusal had a node to give. A node that was
// taken and given back in between is not counted (its updated_at moved),
// so a refusal that came while every node was briefly taken is never
// flagged: the check can miss an anomaly, not invent one. k numbers the
// snapshot in the wave; the result says whether the wave needs no further
// look (flagged, or not checkable).
func (r *MassResult) waveCapacity(w history.Wave, k int, s history.Snap) bool {
	var refused []string
	for _, x := range s.Servers {
		if strings.HasPrefix(x.Name, history.WavePrefix(w.Number)) && noValidHost(x) {
			refused = append(refused, x.ID)
		}
	}
	if len(refused) == 0 {
		return false
	}
	if w.FreeError != "" {
		r.note("wave %d: %d boots refused for want of a node; the free nodes before the wave could not be read (%s)", w.Number, len(refused), w.FreeError)
		return true
	}
	end := map[string]client.IronicNode{}
	for _, n := range s.Nodes {
		end[n.UUID] = n
	}
	var idle []string
	for _, st := range w.FreeAtStart {
		if st.Updated == "" {
			r.note("wave %d: Ironic gives no updated_at: refusals for want of a node are not checked against free nodes", w.Number)
			return true
		}
		n, ok := end[st.UUID]
		if ok && history.FreeNode(n) && client.Str(n.UpdatedAt) == st.Updated {
			idle = append(idle, st.UUID)
		}
	}
	if len(idle) == 0 {
		return false
	}
	sort.Strings(idle)
	sort.Strings(refused)
	r.add("no-valid-host-with-free-nodes", strings.Join(head(refused, 3), ","),
		"wave %d snapshot %d at %s: %d boots ended in ERROR \"No valid host\" while %d nodes stayed free and untouched from before the first boot (e.g. %s)",
		w.Number, k, secs(s.Time), len(refused), len(idle), strings.Join(head(idle, 3), ", "))
	return true
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// checkFinal: after the final heal, no more ACTIVE servers than nodes, and
// Ironic's allocations are exactly corral's reservations.
func (r *MassResult) checkFinal(fs history.FinalState, nodes int) {
	active := 0
	for _, s := range fs.Servers {
		if s.Status == "ACTIVE" {
			active++
		}
	}
	if active > nodes {
		r.add("active-exceeds-nodes", "", "final state: %d servers ACTIVE with only %d nodes", active, nodes)
	}
	if len(fs.Errors) > 0 {
		r.note("final state partly unreadable: allocations not compared with reservations")
		return
	}
	allocByUUID := map[string]client.IronicAllocation{}
	for _, a := range fs.Allocations {
		allocByUUID[a.UUID] = a
	}
	reserved := map[string]bool{} // allocation uuid → a reservation names it
	for _, res := range fs.Reservations {
		if res.AllocationUUID == "" {
			continue // reserved by instance_uuid: CheckFinal compares the nodes
		}
		reserved[res.AllocationUUID] = true
		a, ok := allocByUUID[res.AllocationUUID]
		switch {
		case !ok:
			r.add("allocation-mismatch", res.ServerID, "corral reserves node %s with allocation %s, which Ironic does not have", res.NodeUUID, res.AllocationUUID)
		case client.Str(a.NodeUUID) != res.NodeUUID:
			r.add("allocation-mismatch", res.ServerID, "corral reserves node %s with allocation %s, which Ironic puts on node %q (%s)",
				res.NodeUUID, a.UUID, client.Str(a.NodeUUID), a.State)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(allocByUUID)) {
		// A failed allocation holds no node and reserves nothing.
		if a := allocByUUID[id]; !reserved[id] && client.Str(a.NodeUUID) != "" {
			r.add("allocation-mismatch", a.UUID, "Ironic allocation %s (%s, node %q) is in no reservation of corral's", a.UUID, a.State, client.Str(a.NodeUUID))
		}
	}
}

// Summary is the one-line account of the waves.
func (m *MassResult) Summary() string {
	return fmt.Sprintf("%d waves (%d with refusals for want of a node), %d nodes: %d boots sent, %d accepted, %d failed, %d unknown; at the snapshots %d ACTIVE, %d ERROR (%d No valid host), %d BUILD",
		m.Waves, m.Contended, m.Nodes, m.Sent, m.Accepted, m.Failed, m.Unknown, m.Active, m.Errors, m.NoValidHost, m.Building)
}
