package wire

import "time"

// HostsResponse is the body of GET /v1/hosts.
type HostsResponse struct {
	Hosts    []HostView `json:"hosts"`
	Capacity []Capacity `json:"capacity"`
}

// HostResponse is the body of GET /v1/hosts/{name} and of the answers to
// drain, undrain and force-down.
type HostResponse struct {
	Host HostView `json:"host"`
}

// Host statuses.
const (
	HostUp   = "up"
	HostDown = "down"
	HostLeft = "left"
)

// Host kinds.
const (
	KindIronic     = "ironic"
	KindHypervisor = "hypervisor"
)

// HostView is a compute host with the number of servers it owns.
type HostView struct {
	Name       string    `json:"name"`
	RaftAddr   string    `json:"raft_address"`
	APIAddr    string    `json:"api_address"`
	GossipAddr string    `json:"gossip_address"`
	Kind       string    `json:"kind"`   // KindIronic or KindHypervisor
	Status     string    `json:"status"` // HostUp, HostDown or HostLeft
	JoinedAt   time.Time `json:"joined_at"`
	ChangedAt  time.Time `json:"changed_at"`
	// Drained hosts get no new servers, and the leader moves theirs away.
	Drained     bool   `json:"drained,omitempty"`
	DrainReason string `json:"drain_reason,omitempty"`
	Servers     int    `json:"servers"`
}

// Capacity is the cluster-wide bare-metal capacity of one resource class:
// one figure for the whole cloud, not each host re-reporting everything.
type Capacity struct {
	ResourceClass string `json:"resource_class"` // Placement spelling, e.g. CUSTOM_BAREMETAL_GOLD
	IronicClass   string `json:"ironic_class"`   // as Ironic stores it
	Total         int    `json:"total"`
	Used          int    `json:"used"`        // reserved or holding an instance
	Free          int    `json:"free"`        // available for a new server now
	Unavailable   int    `json:"unavailable"` // maintenance, missing, not yet available
}

// NodesResponse is the body of GET /v1/nodes.
type NodesResponse struct {
	Nodes []NodeView `json:"nodes"`
}

// NodeView is an Ironic node as the cluster mirrors it, with the server
// reserving it.
type NodeView struct {
	UUID           string            `json:"uuid"`
	Name           string            `json:"name,omitempty"`
	ResourceClass  string            `json:"resource_class,omitempty"` // as Ironic stores it
	ProvisionState string            `json:"provision_state"`
	PowerState     string            `json:"power_state,omitempty"`
	Maintenance    bool              `json:"maintenance"`
	Properties     map[string]string `json:"properties,omitempty"`
	Capabilities   map[string]string `json:"capabilities,omitempty"`
	Traits         []string          `json:"traits,omitempty"`
	InstanceUUID   string            `json:"instance_uuid,omitempty"`
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	// Missing: the node was absent from Ironic's latest full listing.
	Missing  bool      `json:"missing,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// InventoryConflict is why Placement refused the node provider's
	// latest inventory, since ConflictSince.
	InventoryConflict string    `json:"inventory_conflict,omitempty"`
	ConflictSince     time.Time `json:"conflict_since,omitzero"`
	ReservedBy        string    `json:"reserved_by,omitempty"`
}

// ReservationsResponse is the body of GET /v1/reservations.
type ReservationsResponse struct {
	Reservations []Reservation `json:"reservations"`
}

// Reservation is an Ironic node committed to a server.
type Reservation struct {
	NodeUUID       string `json:"node_uuid"`
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

// NetworksResponse is the body of GET /v1/networks.
type NetworksResponse struct {
	Networks []NetworkView `json:"networks"`
}

// NetworkView is one L2 segment: every server on the same network id
// shares it, bare metal (VNIC type baremetal) and VMs alike.
type NetworkView struct {
	ID      string          `json:"id"`
	Segment string          `json:"segment"`
	Members []NetworkMember `json:"members"`
}

// NetworkMember is one server port on a network.
type NetworkMember struct {
	ServerID string `json:"server_id"`
	Name     string `json:"name"`
	Host     string `json:"host,omitempty"`
	Kind     string `json:"kind"`           // host kind: ironic (bare metal) or hypervisor (VM)
	Node     string `json:"node,omitempty"` // Ironic node, for bare metal
	VIF      string `json:"vif"`
	VNICType string `json:"vnic_type"` // baremetal for a node's port, normal for a VM's
}
