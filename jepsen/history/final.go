package history

import (
	"github.com/corral-dev/corral/jepsen/client"
)

// FinalState is what the cluster and Ironic hold after the faults healed
// and the servers quiesced.
type FinalState struct {
	Servers      []ServerState             `json:"servers"` // with deleted ones, read linearizably
	Views        map[string][]ServerState  `json:"views"`   // each peer's live servers, read linearizably
	Owners       map[string]Owner          `json:"owners"`  // by server id
	Hosts        []Host                    `json:"hosts"`
	Reservations []Reservation             `json:"reservations"`
	IronicNodes  []client.IronicNode       `json:"ironic_nodes"`
	Allocations  []client.IronicAllocation `json:"ironic_allocations"`
	Running      map[string]bool           `json:"running"` // agent → process runs and is not paused
	Quiesced     bool                      `json:"quiesced"`
	Errors       []string                  `json:"errors,omitempty"`  // what could not be read
	Neutron      *NeutronState             `json:"neutron,omitempty"` // -neutron
}

// Owner, Host and Reservation are what final.json keeps of corral's
// answers, as ServerState is of a server view: the fields the checkers
// read, in a format of the suite's own, so that a results folder reads
// the same whatever corral's API adds to its views.

// Owner is a server's owner as GET /v1/servers/{id}/owner showed it.
type Owner struct {
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	HostUp   bool   `json:"host_up"`
	Status   string `json:"status"`
	Task     string `json:"task_state,omitempty"`
	Node     string `json:"node_uuid,omitempty"`
}

// OwnerOf is what the final state keeps of an owner.
func OwnerOf(o client.OwnerView) Owner {
	return Owner{ServerID: o.ServerID, Host: o.Host, Epoch: o.Epoch, HostUp: o.HostUp, Status: o.Status, Task: o.Task, Node: o.Node}
}

// Host is one host of GET /v1/hosts.
type Host struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Servers int    `json:"servers"`
}

// HostsOf is what the final state keeps of the hosts (nil for nil).
func HostsOf(hs []client.HostView) []Host {
	if hs == nil {
		return nil
	}
	out := make([]Host, 0, len(hs))
	for _, h := range hs {
		out = append(out, Host{Name: h.Name, Status: h.Status, Servers: h.Servers})
	}
	return out
}

// Reservation is one row of GET /v1/reservations.
type Reservation struct {
	NodeUUID       string `json:"node_uuid"`
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

// ReservationsOf is what the final state keeps of the reservations (nil
// for nil).
func ReservationsOf(rs []client.Reservation) []Reservation {
	if rs == nil {
		return nil
	}
	out := make([]Reservation, 0, len(rs))
	for _, r := range rs {
		out = append(out, Reservation{NodeUUID: r.NodeUUID, ServerID: r.ServerID, Host: r.Host, AllocationUUID: r.AllocationUUID})
	}
	return out
}
