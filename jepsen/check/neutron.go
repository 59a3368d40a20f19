package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// CorralPortMark is the description corral gives the ports it creates,
// by which its reaper knows them; a port without it was made by someone
// else, or by a corral that does not mark its ports.
const CorralPortMark = "corral"

// NeutronResult is the verdict of the Neutron checker (-neutron).
type NeutronResult struct {
	Valid         bool             `json:"valid"`
	Ports         int              `json:"ports"`           // the run's ports read after the quiescence
	CorralPorts   int              `json:"corral_ports"`    // of those, made for a boot by corral (not the user's)
	Marked        int              `json:"marked_ports"`    // of those, with the description CorralPortMark
	UserPorts     int              `json:"user_ports"`      // ports made as the user for boots
	UserPortBoots int              `json:"user_port_boots"` // boots handed one
	Checked       int              `json:"active_checked"`  // ACTIVE servers held to their ports and addresses
	Orphans       int              `json:"orphan_ports"`
	Unattributed  int              `json:"unattributed_ports"` // the user's project's, made during the run, for a device that is no server of the run
	VIFsChecked   bool             `json:"vifs_checked"`       // the simulator's log gave each node's VIFs
	Reap          history.ReapWait `json:"reap"`
	Counts        map[string]int   `json:"anomaly_counts,omitempty"`
	Anomalies     []Anomaly        `json:"anomalies,omitempty"`
	Notes         []string         `json:"notes,omitempty"`
}

func (r *NeutronResult) add(kind, server, format string, args ...any) {
	r.Valid = false
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[kind]++
	if r.Counts[kind] <= 25 {
		r.Anomalies = append(r.Anomalies, Anomaly{Kind: kind, Server: server, Detail: fmt.Sprintf(format, args...)})
	}
}

func (r *NeutronResult) note(format string, args ...any) {
	if len(r.Notes) < 40 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

// Summary is the report's one line.
func (r *NeutronResult) Summary() string {
	vifs := "VIFs not checked"
	if r.VIFsChecked {
		vifs = "VIFs checked"
	}
	return fmt.Sprintf("%d ports (%d corral's, %d marked %q; %d the user's, %d boots with one); %d ACTIVE servers checked; %d orphans after waiting %.0fs for the reaper (%d before); %d unattributed; %s",
		r.Ports, r.CorralPorts, r.Marked, CorralPortMark, r.UserPorts, r.UserPortBoots, r.Checked, r.Orphans, r.Reap.WaitedS,
		r.Reap.OrphansBefore, r.Unattributed, vifs)
}

// neutronRun is what the checker derives from the history and the final
// state.
type neutronRun struct {
	ns       *history.NeutronState
	servers  map[string]history.ServerState // every server corral lists, by id
	live     map[string]bool
	known    map[string]bool
	user     map[string]bool
	byDevice map[string][]client.NeutronPort
	byID     map[string]client.NeutronPort
	// requested are each server's networks as its boot asked for them;
	// portFor the servers whose boot was handed each user port.
	requested map[string][]history.NetRequest
	portFor   map[string][]string
}

// Neutron checks, after the quiescence and the reaper's grace, that
// Neutron holds exactly the ports corral's servers should have:
// no port whose device is a server of the run that is not live (an
// orphan), every ACTIVE server has one port per requested network,
// bound to its node, and corral shows the ports' addresses; no port
// serves two servers; the user's ports are given back unbound, and never
// deleted. effects is the simulator's side-effect log (VIFs); a log that
// could not be read, or real Ironic's none, skips the VIF checks.
func Neutron(ix *history.Index, fs history.FinalState, effects client.EffectLog) NeutronResult {
	r := NeutronResult{Valid: true}
	ns := fs.Neutron
	if ns == nil {
		r.add("unreadable", "", "no Neutron state was recorded")
		return r
	}
	for _, e := range ns.Errors {
		r.add("unreadable", "", "%s", e)
	}
	run := newNeutronRun(ix, fs)
	r.Ports, r.UserPorts, r.Reap = len(ns.Ports), len(ns.UserPorts), ns.Reap
	for _, p := range ns.Ports {
		if run.known[p.DeviceID] && !run.user[p.ID] {
			r.CorralPorts++
			if p.Description == CorralPortMark {
				r.Marked++
			}
		}
	}
	for _, ids := range run.portFor {
		r.UserPortBoots += len(ids)
	}
	r.checkOrphans(run, fs)
	r.checkServers(run)
	r.checkShared(run)
	r.checkUserPorts(run)
	r.checkVIFs(run, effects)
	return r
}

func newNeutronRun(ix *history.Index, fs history.FinalState) *neutronRun {
	ns := fs.Neutron
	run := &neutronRun{ns: ns, servers: map[string]history.ServerState{}, live: history.LiveIDs(fs.Servers),
		known: history.Set(ns.KnownServers), user: history.Set(ns.UserPorts), byDevice: map[string][]client.NeutronPort{},
		byID: map[string]client.NeutronPort{}, requested: map[string][]history.NetRequest{}, portFor: map[string][]string{}}
	for _, p := range ns.Ports {
		run.byID[p.ID] = p
		if p.DeviceID != "" {
			run.byDevice[p.DeviceID] = append(run.byDevice[p.DeviceID], p)
		}
	}
	for _, s := range fs.Servers {
		run.servers[s.ID] = s
		run.known[s.ID] = true
		k := ix.Keys[s.Name]
		if k == nil || k.Boot == nil {
			continue
		}
		nets := k.Boot.Invoke.Value.Nets
		run.requested[s.ID] = nets
		for _, n := range nets {
			if n.Port != "" {
				run.portFor[n.Port] = append(run.portFor[n.Port], s.ID)
			}
		}
	}
	return run
}

// checkOrphans: (a) no port of corral's whose server is not live, once
// the reaper had its grace; ports of the user's project for a device that
// is no server of the run are counted, and an anomaly only when bound to
// one of the run's nodes (then they are the run's for sure).
func (r *NeutronResult) checkOrphans(run *neutronRun, fs history.FinalState) {
	ns := run.ns
	reap := fmt.Sprintf("after %.0fs of the %.0fs the suite gives the leader's reaper (grace %.0fs, %s)", ns.Reap.WaitedS,
		ns.Reap.WaitS, ns.Reap.GraceS, graceOption(ns.Reap.Option))
	for _, p := range history.Orphans(ns.Ports, run.live, run.known, run.user) {
		r.Orphans++
		state := "unknown to corral (never acknowledged, never listed)"
		if s, ok := run.servers[p.DeviceID]; ok {
			state = s.Status
		}
		r.add("neutron-orphan-port", p.DeviceID, "port %s (%s, created %s, %s) has as device server %s, which is %s; still there %s",
			p.ID, strings.Join(p.IPs(), ","), p.CreatedAt, markText(p), p.DeviceID, state, reap)
	}
	nodes := map[string]bool{}
	for _, n := range fs.IronicNodes {
		nodes[n.UUID] = true
	}
	for _, p := range ns.Ports {
		if run.known[p.DeviceID] || run.user[p.ID] || p.DeviceID == "" {
			continue
		}
		r.Unattributed++
		if nodes[p.HostID] {
			r.add("neutron-foreign-device", p.DeviceID, "port %s is bound to node %s of the run, but its device %s is no server of the run (%s)",
				p.ID, p.HostID, p.DeviceID, markText(p))
			continue
		}
		r.note("port %s of the user's project, created %s during the run, has as device %s, which is no server of the run (another client's?)",
			p.ID, p.CreatedAt, p.DeviceID)
	}
	if r.CorralPorts > 0 && r.Marked == 0 {
		r.note("no port corral made bears the description %q: the corral under test does not mark its ports", CorralPortMark)
	}
}

func graceOption(opt string) string {
	if opt == "" {
		return "the agents' default: corral has no option for it yet"
	}
	return "[neutron] " + opt
}

func markText(p client.NeutronPort) string {
	if p.Description == CorralPortMark {
		return "marked as corral's"
	}
	return fmt.Sprintf("description %q", p.Description)
}

// checkServers: (b) each live server has at most one port per requested
// network, an ACTIVE one exactly one, bound to its node, and corral shows
// exactly the ports' addresses; a port of a network or user port its boot
// did not ask for is an anomaly.
func (r *NeutronResult) checkServers(run *neutronRun) {
	for _, id := range slices.Sorted(maps.Keys(run.live)) {
		s := run.servers[id]
		req, ok := run.requested[id]
		if !ok {
			r.note("server %s (%s) has no boot in the history: its networks are unknown, its ports not checked", id, s.Name)
			continue
		}
		active := s.Status == "ACTIVE"
		if active {
			r.Checked++
		}
		wantNet, wantPort := map[string]int{}, map[string]bool{}
		for _, n := range req {
			if n.Port != "" {
				wantPort[n.Port] = true
			} else {
				wantNet[n.Network]++
			}
		}
		gotNet := map[string][]string{}
		for _, p := range run.byDevice[id] {
			switch {
			case wantPort[p.ID]:
			case run.user[p.ID] || wantNet[p.NetworkID] == 0:
				r.add("neutron-unrequested-port", id, "port %s on network %s has the server as device; its boot asked for %s",
					p.ID, run.netName(p.NetworkID), reqText(req))
			default:
				gotNet[p.NetworkID] = append(gotNet[p.NetworkID], p.ID)
			}
			if active && (p.HostID != s.Node || p.VNICType != "baremetal") {
				r.add("neutron-binding-mismatch", id, "port %s is bound to host %q with vnic type %q; the server is ACTIVE on node %s (want baremetal)",
					p.ID, p.HostID, p.VNICType, s.Node)
			}
		}
		for _, net := range slices.Sorted(maps.Keys(wantNet)) {
			got := gotNet[net]
			switch {
			case len(got) > wantNet[net]:
				r.add("neutron-double-port", id, "%d ports on network %s for %d requested (%s): %s", len(got), run.netName(net),
					wantNet[net], s.Status, strings.Join(got, ", "))
			case active && len(got) < wantNet[net]:
				r.add("neutron-missing-port", id, "ACTIVE server has %d ports on network %s, its boot asked for %d", len(got),
					run.netName(net), wantNet[net])
			}
		}
		for _, port := range slices.Sorted(maps.Keys(wantPort)) {
			if p, ok := run.byID[port]; ok && active && p.DeviceID != id {
				r.add("neutron-user-port-not-bound", id, "ACTIVE server was booted with the user's port %s, whose device is %q", port, p.DeviceID)
			}
		}
		if active {
			r.checkAddresses(run, id)
		}
	}
}

// checkAddresses: corral shows an ACTIVE server's addresses as the ports'
// fixed IPs and MACs, by network name.
func (r *NeutronResult) checkAddresses(run *neutronRun, id string) {
	var want []history.Address
	for _, p := range run.byDevice[id] {
		for _, ip := range p.IPs() {
			want = append(want, history.Address{Network: run.netName(p.NetworkID), IP: ip, MAC: p.MAC})
		}
	}
	got, ok := run.ns.Addresses[id]
	if !ok {
		r.add("neutron-address-mismatch", id, "corral did not list the server when its addresses were read; Neutron: %s", addrText(want))
		return
	}
	if !sameAddresses(want, got) {
		r.add("neutron-address-mismatch", id, "corral shows %s, the ports hold %s", addrText(got), addrText(want))
	}
}

func sameAddresses(a, b []history.Address) bool {
	key := func(x history.Address) string { return x.Network + "|" + x.IP + "|" + strings.ToLower(x.MAC) }
	ka, kb := make([]string, 0, len(a)), make([]string, 0, len(b))
	for _, x := range a {
		ka = append(ka, key(x))
	}
	for _, x := range b {
		kb = append(kb, key(x))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

func addrText(as []history.Address) string {
	if len(as) == 0 {
		return "no address"
	}
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", a.Network, a.IP, a.MAC))
	}
	return strings.Join(parts, ", ")
}

func reqText(req []history.NetRequest) string {
	if len(req) == 0 {
		return "no network"
	}
	parts := make([]string, 0, len(req))
	for _, n := range req {
		if n.Port != "" {
			parts = append(parts, "port "+n.Port)
		} else {
			parts = append(parts, "network "+n.Network)
		}
	}
	return strings.Join(parts, ", ")
}

func (run *neutronRun) netName(id string) string {
	if n := run.ns.Networks[id]; n != "" {
		return n
	}
	return id
}

// checkShared: (c) no two live servers show one address, and no user port
// went to two boots whose servers are live.
func (r *NeutronResult) checkShared(run *neutronRun) {
	holders := map[string][]string{}
	for _, id := range slices.Sorted(maps.Keys(run.live)) {
		for _, a := range run.ns.Addresses[id] {
			holders[a.Network+" "+a.IP] = append(holders[a.Network+" "+a.IP], id)
			if a.MAC != "" {
				holders["MAC "+strings.ToLower(a.MAC)] = append(holders["MAC "+strings.ToLower(a.MAC)], id)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(holders)) {
		if ids := slices.Compact(holders[k]); len(ids) > 1 {
			r.add("neutron-shared-port", strings.Join(ids, ","), "live servers %s all show address %s", strings.Join(ids, ", "), k)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(run.portFor)) {
		var live []string
		for _, id := range run.portFor[port] {
			if run.live[id] {
				live = append(live, id)
			}
		}
		if len(live) > 1 {
			r.add("neutron-shared-port", strings.Join(live, ","), "the user's port %s was given to live servers %s", port, strings.Join(live, ", "))
		}
	}
}

// checkUserPorts: (d) every port the user made for a boot is still there;
// one whose server is not live is given back (no device, owner or host);
// one of a live server that is not ACTIVE (ERROR) is given back or still
// the server's.
func (r *NeutronResult) checkUserPorts(run *neutronRun) {
	for _, port := range run.ns.UserPorts {
		servers := run.portFor[port]
		p, ok := run.byID[port]
		if !ok {
			r.add("neutron-user-port-deleted", strings.Join(servers, ","), "the user's port %s (handed to %s) is gone from Neutron: it must be given back, never deleted",
				port, serversText(run, servers))
			continue
		}
		holder := ""
		for _, id := range servers {
			if run.live[id] {
				holder = id
			}
		}
		released := p.DeviceID == "" && p.DeviceOwner == "" && p.HostID == ""
		switch {
		case holder != "" && (p.DeviceID == holder || released):
		case holder != "":
			r.add("neutron-user-port-not-released", holder, "the user's port %s of live server %s has device %q", port, holder, p.DeviceID)
		case !released:
			r.add("neutron-user-port-not-released", strings.Join(servers, ","), "the user's port %s (handed to %s) still has device %q, owner %q, host %q",
				port, serversText(run, servers), p.DeviceID, p.DeviceOwner, p.HostID)
		}
	}
}

func serversText(run *neutronRun, ids []string) string {
	if len(ids) == 0 {
		return "no server that exists"
	}
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s, %s", id, run.servers[id].Status))
	}
	return strings.Join(parts, "; ")
}

// checkVIFs, on the simulator's log of VIF attaches and detaches: no port
// is attached to two nodes, and each port of an ACTIVE server is attached
// to its node. A VIF left on a node whose server is gone is a note: the
// simulator does not detach VIFs at undeploy as Ironic does.
func (r *NeutronResult) checkVIFs(run *neutronRun, effects client.EffectLog) {
	switch {
	case effects.Error != "":
		r.note("VIFs not checked: %s", effects.Error)
		return
	case effects.Dropped > 0:
		r.note("VIFs not checked: the simulator dropped %d side effects of its log", effects.Dropped)
		return
	case effects.SideEffects == nil:
		r.note("VIFs not checked: no side-effect log (a real Ironic)")
		return
	}
	r.VIFsChecked = true
	es := slices.Clone(effects.SideEffects)
	slices.SortStableFunc(es, func(a, b client.SideEffect) int { return int(a.Seq - b.Seq) })
	on := map[string]map[string]bool{} // port → nodes
	for _, e := range es {
		if e.Kind != "vif" || e.VIF == "" {
			continue
		}
		if on[e.VIF] == nil {
			on[e.VIF] = map[string]bool{}
		}
		if e.Target == "attach" {
			on[e.VIF][e.Node] = true
		} else {
			delete(on[e.VIF], e.Node)
		}
	}
	stale := 0
	for _, port := range slices.Sorted(maps.Keys(on)) {
		nodes := slices.Sorted(maps.Keys(on[port]))
		if len(nodes) > 1 {
			r.add("neutron-shared-port", run.byID[port].DeviceID, "port %s is attached to nodes %s at once", port, strings.Join(nodes, ", "))
		}
		if p, ok := run.byID[port]; len(nodes) > 0 && (!ok || !run.live[p.DeviceID]) {
			stale++
		}
	}
	if stale > 0 {
		r.note("%d VIFs stay attached to nodes in the simulator for ports that are gone or whose server is not live (the simulator's undeploy does not detach them as Ironic's does)", stale)
	}
	for _, id := range slices.Sorted(maps.Keys(run.live)) {
		s := run.servers[id]
		if s.Status != "ACTIVE" {
			continue
		}
		for _, p := range run.byDevice[id] {
			if !on[p.ID][s.Node] {
				r.add("neutron-vif-missing", id, "port %s of the ACTIVE server is not attached to its node %s", p.ID, s.Node)
			}
		}
	}
}
