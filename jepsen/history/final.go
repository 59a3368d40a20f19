package history

import (
	"github.com/corral-dev/corral/jepsen/client"
)

// FinalState is what the cluster and Ironic hold after the faults healed
// and the servers quiesced.
type FinalState struct {
	Servers      []ServerState               `json:"servers"` // with deleted ones, read linearizably
	Views        map[string][]ServerState    `json:"views"`   // each peer's live servers, read linearizably
	Owners       map[string]client.OwnerView `json:"owners"`  // by server id
	Hosts        []client.HostView           `json:"hosts"`
	Reservations []client.Reservation        `json:"reservations"`
	IronicNodes  []client.IronicNode         `json:"ironic_nodes"`
	Allocations  []client.IronicAllocation   `json:"ironic_allocations"`
	Running      map[string]bool             `json:"running"` // agent → process runs and is not paused
	Quiesced     bool                        `json:"quiesced"`
	Errors       []string                    `json:"errors,omitempty"` // what could not be read
}
