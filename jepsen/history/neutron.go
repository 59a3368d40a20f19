package history

import (
	"maps"
	"slices"
	"strings"

	"github.com/corral-dev/corral/jepsen/client"
)

// NetRequest is one network of a boot as the workload asked for it
// (-neutron): the shared network, or a port of the user's.
type NetRequest struct {
	Network string `json:"uuid,omitempty"`
	Port    string `json:"port,omitempty"`
}

// NeutronState is what Neutron, and corral's view of the servers'
// addresses, showed after the quiescence (-neutron): final.json's
// "neutron".
type NeutronState struct {
	URL       string `json:"url"`
	Network   string `json:"network"` // the shared network the boots asked for
	NetworkID string `json:"network_id"`
	ProjectID string `json:"project_id,omitempty"` // the workload user's project
	Since     string `json:"since"`                // the run's start (RFC 3339, UTC)
	// Ports are the run's ports on the network: those whose device is a
	// server of the run (KnownServers), the user's ports (UserPorts), and
	// ports of the user's project made since the run started whose device
	// is no server of the run (the check lists them apart).
	Ports []client.NeutronPort `json:"ports"`
	// KnownServers are the ids of every server of the run: those corral
	// lists (deleted ones included) and those the history names.
	KnownServers []string `json:"known_servers"`
	// UserPorts are the ports the suite created as the workload's user
	// and handed to boots ({"port": ...}), each to one boot at most.
	UserPorts []string `json:"user_ports"`
	// Addresses are the live servers' addresses in corral's view
	// (GET /servers/detail), by server id.
	Addresses map[string][]Address `json:"addresses"`
	Networks  map[string]string    `json:"networks"` // network id → name
	Reap      ReapWait             `json:"reap"`
	Errors    []string             `json:"errors,omitempty"` // what could not be read
}

// Address is one address of a server in corral's view:
// addresses[Network][i].addr and OS-EXT-IPS-MAC:mac_addr.
type Address struct {
	Network string `json:"network"`
	IP      string `json:"addr"`
	MAC     string `json:"mac,omitempty"`
}

// ReapWait is how long the suite gave the leader's reaper to delete the
// ports whose server is gone before it read Neutron for the check.
type ReapWait struct {
	// Option is the agents' [neutron] option that set the grace, ""
	// when corral has none yet (the agents kept their default).
	Option  string  `json:"option,omitempty"`
	GraceS  float64 `json:"grace_s"`  // the grace the agents were given, or assumed
	WaitS   float64 `json:"wait_s"`   // the most the suite would wait
	WaitedS float64 `json:"waited_s"` // how long it waited
	// OrphansBefore is how many orphans Neutron showed at the first read
	// it answered (-1: none), OrphansAfter at the check's read.
	OrphansBefore int `json:"orphans_before"`
	OrphansAfter  int `json:"orphans_after"`
}

// Orphans are the ports whose device is a server of the run that is not
// live (deleted, or never known to corral), apart from the user's own
// ports (given back, not deleted: a separate check). live holds the ids
// of the servers corral lists as not DELETED; known every server id of
// the run.
func Orphans(ports []client.NeutronPort, live, known, userPorts map[string]bool) []client.NeutronPort {
	var out []client.NeutronPort
	for _, p := range ports {
		if p.DeviceID == "" || userPorts[p.ID] || !known[p.DeviceID] || live[p.DeviceID] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Set is the set of ids.
func Set(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// LiveIDs are the ids of the servers not DELETED.
func LiveIDs(ss []ServerState) map[string]bool {
	out := map[string]bool{}
	for _, s := range ss {
		if s.Status != "DELETED" {
			out[s.ID] = true
		}
	}
	return out
}

// ServerIDs are the ids of every server the history names (boots
// acknowledged, deletes, reads and lists).
func ServerIDs(ops []Op) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, op := range ops {
		add(op.Value.ID)
		if op.Value.Server != nil {
			add(op.Value.Server.ID)
		}
		for _, s := range op.Value.Servers {
			add(s.ID)
		}
	}
	return out
}

// AddressesOf is what the final state keeps of a server's addresses in
// corral's view (Nova's shape: {NETWORK: [{"addr", "version",
// "OS-EXT-IPS:type", "OS-EXT-IPS-MAC:mac_addr"}]}), sorted by network and
// address.
func AddressesOf(s client.Server) []Address {
	var out []Address
	for _, net := range slices.Sorted(maps.Keys(s.Addresses)) {
		list, _ := s.Addresses[net].([]any)
		for _, item := range list {
			m, _ := item.(map[string]any)
			ip, _ := m["addr"].(string)
			mac, _ := m["OS-EXT-IPS-MAC:mac_addr"].(string)
			out = append(out, Address{Network: net, IP: ip, MAC: mac})
		}
	}
	slices.SortStableFunc(out, func(a, b Address) int {
		if a.Network != b.Network {
			return strings.Compare(a.Network, b.Network)
		}
		return strings.Compare(a.IP, b.IP)
	})
	return out
}
