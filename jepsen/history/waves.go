package history

import (
	"fmt"

	"github.com/corral-dev/corral/jepsen/client"
)

// Wave is what one wave of the mass-boot workload did and saw; waves.json
// holds them and the mass-boot checker reads them.
type Wave struct {
	Number int   `json:"number"`
	Start  int64 `json:"start"` // ns since the start of the run: the first boot was sent after this
	End    int64 `json:"end"`   // the last deletes were answered (or the wave was left standing)

	Sent     int `json:"boots_sent"`
	Accepted int `json:"boots_accepted"`
	Failed   int `json:"boots_failed"`  // definite failures (4xx, 503)
	Unknown  int `json:"boots_unknown"` // timeouts, 500, 504, lost connections

	// FreeAtStart: the nodes that could be allocated just before the
	// first boot (available, no instance, no allocation, not in
	// maintenance, power state known), with Ironic's updated_at.
	FreeAtStart []NodeStamp `json:"free_at_start"`
	FreeError   string      `json:"free_error,omitempty"` // why FreeAtStart could not be read

	DuringFault bool `json:"during_fault"` // the boots were sent while a fault was in place

	Settled     bool   `json:"settled"` // no server of the wave was in BUILD at the first snapshot
	SettleError string `json:"settle_error,omitempty"`
	// Snapshots: after the settle, and again after the hold, before the
	// deletes.
	Snapshots []Snap `json:"snapshots"`

	DeletesSent int  `json:"deletes_sent"`
	DeletesOK   int  `json:"deletes_ok"`
	Kept        bool `json:"kept,omitempty"` // the last wave stays for the final-state check
}

// NodeStamp is a node and the updated_at Ironic gave it.
type NodeStamp struct {
	UUID    string `json:"uuid"`
	Updated string `json:"updated_at"`
}

// Snap is a wave's snapshot: the live servers (a linearizable list),
// then Ironic's nodes and allocations.
type Snap struct {
	Time        int64                     `json:"time"`
	Servers     []ServerState             `json:"servers"`
	Nodes       []client.IronicNode       `json:"ironic_nodes"`
	Allocations []client.IronicAllocation `json:"ironic_allocations"`
	Errors      []string                  `json:"errors,omitempty"`
}

// WavePrefix begins the name of every boot of a wave (jepsen-w2-017).
func WavePrefix(wave int) string { return fmt.Sprintf("jepsen-w%d-", wave) }

// FreeNode reports whether Ironic's allocation engine could give n to a
// new allocation.
func FreeNode(n client.IronicNode) bool {
	return n.ProvisionState == "available" && client.Str(n.InstanceUUID) == "" && client.Str(n.AllocationUUID) == "" &&
		!n.Maintenance && n.PowerState != nil
}
