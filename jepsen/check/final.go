package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// Anomaly is one broken invariant.
type Anomaly struct {
	Kind   string `json:"kind"`
	Server string `json:"server,omitempty"`
	Detail string `json:"detail"`
}

// FinalResult is the verdict of the final-state checker.
type FinalResult struct {
	Valid         bool           `json:"valid"`
	Acknowledged  int            `json:"acknowledged_boots"`
	Unknown       int            `json:"unknown_boots"`
	UnknownExist  int            `json:"unknown_boots_applied"`
	Failed        int            `json:"failed_boots"`
	DeletedAcks   int            `json:"acknowledged_deletes"`
	LiveServers   int            `json:"live_servers"`
	ActiveServers int            `json:"active_servers"`
	ErrorServers  int            `json:"error_servers"`
	Unscheduled   int            `json:"unscheduled_error_servers"` // ERROR at creation, never owned
	Reservations  int            `json:"reservations"`
	IronicClaims  int            `json:"ironic_claimed_nodes"`
	Counts        map[string]int `json:"anomaly_counts,omitempty"`
	Anomalies     []Anomaly      `json:"anomalies,omitempty"`
}

func (r *FinalResult) add(kind, server, format string, args ...any) {
	r.Valid = false
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[kind]++
	if r.Counts[kind] <= 25 {
		r.Anomalies = append(r.Anomalies, Anomaly{Kind: kind, Server: server, Detail: fmt.Sprintf(format, args...)})
	}
}

// Final checks invariants 1-3 on the final state against the history.
func Final(ix *history.Index, fs history.FinalState) FinalResult {
	r := FinalResult{Valid: true}
	for _, e := range fs.Errors {
		r.add("unreadable", "", "%s", e)
	}
	if !fs.Quiesced {
		r.add("not-quiesced", "", "servers were still in BUILD or being deleted when the deadline passed")
	}
	byName := map[string][]history.ServerState{}
	byID := map[string]history.ServerState{}
	live := map[string]history.ServerState{}
	for _, s := range fs.Servers {
		byName[s.Name] = append(byName[s.Name], s)
		byID[s.ID] = s
		if s.Status != "DELETED" {
			live[s.ID] = s
			switch s.Status {
			case "ACTIVE":
				r.ActiveServers++
			case "ERROR":
				r.ErrorServers++
			}
		}
	}
	r.LiveServers = len(live)
	if len(ix.Order) > 0 && r.ActiveServers == 0 && !ix.SawActive {
		r.add("nothing-built", "", "no server ever became ACTIVE: the run exercised no build (check the flavor and the Ironic nodes)")
	}
	r.checkHistory(ix, byName, byID)
	r.checkOwners(fs, live)
	r.checkReservations(fs, live)
	r.checkIronic(fs, live)
	return r
}

// checkHistory: acknowledged writes were kept, failed ones never applied.
func (r *FinalResult) checkHistory(ix *history.Index, byName map[string][]history.ServerState, byID map[string]history.ServerState) {
	for _, name := range ix.Order {
		k := ix.Keys[name]
		found := byName[name]
		if len(found) > 1 {
			var ids []string
			for _, s := range found {
				ids = append(ids, s.ID)
			}
			r.add("duplicate-boot", name, "one boot created %d servers: %s", len(found), strings.Join(ids, ", "))
		}
		switch {
		case k.BootOK:
			r.Acknowledged++
		case k.BootFailed:
			r.Failed++
		default:
			r.Unknown++
			if len(found) > 0 {
				r.UnknownExist++
			}
		}
		if c := k.Boot.Complete; k.BootFailed && c.Code == 400 && strings.Contains(c.Error, "Flavor") &&
			strings.Contains(c.Error, "could not be found") {
			// The flavor was created, and acknowledged, before the first boot.
			r.add("stale-flavor-rejection", name, "boot via %s at %s rejected: %s", c.Node, secs(c.Time), truncate(c.Error, 160))
		}
		if k.BootFailed && (len(found) > 0 || k.Observed) {
			r.add("failed-boot-applied", name, "the boot failed definitely (%s) but the server exists",
				completionText(k.Boot))
		}
		if !k.BootOK {
			continue
		}
		id := k.Boot.Complete.Value.ID
		s, ok := byID[id]
		switch {
		case !ok:
			r.add("lost-boot", id, "boot of %s was acknowledged at %s but the server does not exist, not even as DELETED",
				name, secs(k.Boot.Complete.Time))
		case s.Status == "DELETED" && !k.DeleteMaybe:
			why := ""
			for _, t := range k.Delete503 {
				why += fmt.Sprintf("; a delete was answered 503 (not applied) at %s", secs(t))
			}
			r.add("lost-boot", id, "boot of %s was acknowledged at %s; the server is DELETED although no delete was acknowledged or left unknown%s",
				name, secs(k.Boot.Complete.Time), why)
		}
	}
	for _, p := range ix.Pairs {
		if p.Invoke.F != history.FDelete || p.Type() != history.OK {
			continue
		}
		r.DeletedAcks++
		if s, ok := byID[p.Invoke.Value.ID]; ok && s.Status != "DELETED" {
			r.add("delete-not-applied", s.ID, "delete acknowledged at %s, but the server is %s (task %q)",
				secs(p.Complete.Time), s.Status, s.Task)
		}
	}
}

func completionText(p *history.Pair) string {
	if p.Complete == nil {
		return "no answer"
	}
	if p.Complete.Error != "" {
		return truncate(p.Complete.Error, 160)
	}
	return fmt.Sprintf("HTTP %d", p.Complete.Code)
}

func secs(t int64) string { return fmt.Sprintf("%.3fs", float64(t)/1e9) }

// checkOwners: each live server has one owner, the same on every peer,
// and it is a live host (invariant 2); nothing is left half done.
func (r *FinalResult) checkOwners(fs history.FinalState, live map[string]history.ServerState) {
	hostUp := map[string]bool{}
	for _, h := range fs.Hosts {
		hostUp[h.Name] = h.Status == client.HostUp
	}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		s := live[id]
		if s.Status == "BUILD" || s.Deleting() || s.Acting() {
			r.add("stuck", id, "still %s (task %q) after the faults healed", s.Status, s.Task)
		}
		o, ok := fs.Owners[id]
		host := s.Host
		if ok {
			host = o.Host
			if o.Host != s.Host {
				r.add("owner-disagreement", id, "owner endpoint says %q, server view says %q", o.Host, s.Host)
			}
		}
		switch {
		case host == "" && s.Status == "ERROR" && (!ok || o.Epoch == 0):
			r.Unscheduled++ // failed scheduling ("No valid host"): never had an owner, holds nothing
			continue
		case host == "":
			r.add("no-owner", id, "live server (%s) has no owner host", s.Status)
			continue
		case !hostUp[host] || (ok && !o.HostUp):
			r.add("owner-down", id, "owner %s is not an up host", host)
		case !fs.Running[host]:
			r.add("owner-dead", id, "owner %s is not a running agent", host)
		}
	}
	for peer, view := range fs.Views {
		seen := map[string]bool{}
		for _, v := range view {
			seen[v.ID] = true
			s, ok := live[v.ID]
			if !ok {
				r.add("replica-divergence", v.ID, "%s lists a live server the leader does not", peer)
				continue
			}
			if v.Host != s.Host || v.Status != s.Status || v.Node != s.Node {
				r.add("replica-divergence", v.ID, "%s sees %s/%s/%s, the leader %s/%s/%s", peer,
					v.Status, v.Host, v.Node, s.Status, s.Host, s.Node)
			}
		}
		for id := range live {
			if !seen[id] {
				r.add("replica-divergence", id, "%s does not list this live server", peer)
			}
		}
	}
}

// checkReservations: at most one server per node and one node per server
// in corral's state, agreeing with the servers' views (invariant 1).
func (r *FinalResult) checkReservations(fs history.FinalState, live map[string]history.ServerState) {
	r.Reservations = len(fs.Reservations)
	byNode := map[string][]string{}
	byServer := map[string][]string{}
	for _, res := range fs.Reservations {
		byNode[res.NodeUUID] = append(byNode[res.NodeUUID], res.ServerID)
		byServer[res.ServerID] = append(byServer[res.ServerID], res.NodeUUID)
		s, ok := live[res.ServerID]
		switch {
		case !ok:
			r.add("reservation-leak", res.ServerID, "node %s is reserved for a server that is not live", res.NodeUUID)
		case s.Node != res.NodeUUID:
			r.add("reservation-mismatch", res.ServerID, "reservation holds node %s, the server shows %q", res.NodeUUID, s.Node)
		case s.Host != res.Host:
			r.add("reservation-mismatch", res.ServerID, "reservation names host %s, the server's owner is %s", res.Host, s.Host)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(byNode)) {
		if len(byNode[n]) > 1 {
			r.add("double-booked-node", strings.Join(byNode[n], ","), "node %s is reserved by %d servers", n, len(byNode[n]))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(byServer)) {
		if len(byServer[s]) > 1 {
			r.add("server-multi-node", s, "server holds %d nodes: %s", len(byServer[s]), strings.Join(byServer[s], ","))
		}
	}
	viewNode := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		s := live[id]
		if s.Node == "" {
			if s.Status == "ACTIVE" {
				r.add("active-without-node", id, "ACTIVE server holds no node")
			}
			continue
		}
		viewNode[s.Node] = append(viewNode[s.Node], id)
		if len(byServer[id]) == 0 {
			r.add("reservation-mismatch", id, "server shows node %s but corral has no reservation for it", s.Node)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(viewNode)) {
		if len(viewNode[n]) > 1 {
			r.add("double-booked-node", strings.Join(viewNode[n], ","), "servers %v all show node %s", viewNode[n], n)
		}
	}
}

// checkIronic: Ironic agrees, and holds nothing for servers that are not
// live (no leak).
func (r *FinalResult) checkIronic(fs history.FinalState, live map[string]history.ServerState) {
	nodeOf := map[string][]string{} // server id → Ironic nodes whose instance_uuid it is
	nodes := map[string]client.IronicNode{}
	for _, n := range fs.IronicNodes {
		nodes[n.UUID] = n
		inst := client.Str(n.InstanceUUID)
		if inst == "" {
			if provisioned(n.ProvisionState) {
				r.add("ironic-orphan-node", n.UUID, "Ironic node %s is %q with no instance: deployed for nobody", n.UUID, n.ProvisionState)
			}
			continue
		}
		r.IronicClaims++
		nodeOf[inst] = append(nodeOf[inst], n.UUID)
		if _, ok := live[inst]; !ok {
			r.add("ironic-leak", inst, "Ironic node %s (%s) holds instance_uuid of a server that is not live", n.UUID, n.ProvisionState)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(nodeOf)) {
		if len(nodeOf[id]) > 1 {
			r.add("ironic-server-multi-node", id, "Ironic nodes %s all hold this instance", strings.Join(nodeOf[id], ","))
		}
	}
	allocOfNode := map[string][]string{}
	allocsOf := map[string][]string{}
	for _, a := range fs.Allocations {
		server := a.UUID
		if node := client.Str(a.NodeUUID); node != "" {
			allocOfNode[node] = append(allocOfNode[node], a.UUID)
		}
		allocsOf[server] = append(allocsOf[server], a.UUID)
		if _, ok := live[server]; !ok {
			r.add("ironic-leak", server, "Ironic allocation %s (%s, node %q) belongs to no live server", a.UUID, a.State, client.Str(a.NodeUUID))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(allocOfNode)) {
		if len(allocOfNode[n]) > 1 {
			r.add("ironic-double-booked-node", n, "Ironic node %s has %d allocations: %s", n, len(allocOfNode[n]), strings.Join(allocOfNode[n], ","))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		s := live[id]
		held := nodeOf[id]
		switch {
		case s.Node == "" && len(held) > 0:
			r.add("ironic-mismatch", id, "corral holds no node for this server, Ironic gives it %s", strings.Join(held, ","))
		case s.Node != "" && (len(held) != 1 || held[0] != s.Node):
			n := nodes[s.Node]
			r.add("ironic-mismatch", id, "corral holds node %s (Ironic: instance_uuid %q, %s); Ironic nodes holding this server: %v",
				s.Node, client.Str(n.InstanceUUID), n.ProvisionState, held)
		case s.Status == "ACTIVE" && nodes[s.Node].ProvisionState != "active":
			r.add("ironic-mismatch", id, "ACTIVE server's node %s is %q in Ironic", s.Node, nodes[s.Node].ProvisionState)
		}
	}
}

// provisioned reports whether a node in this provision state holds (or is
// being given) an image: it must belong to a live server.
func provisioned(state string) bool {
	switch state {
	case "active", "deploying", "wait call-back", "deploy failed", "rescue", "rescuing", "rescue wait", "rescue failed":
		return true
	}
	return false
}
