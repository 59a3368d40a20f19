package client

// Every request and response body of corral's API that the suite sends or
// reads is declared in this file, and only here: the Nova-compatible API
// under /compute/v2.1 and the admin API under /v1. Each type holds the
// subset of fields the suite uses. The rest of the suite names these types
// and never spells a body as a map or an anonymous struct, so that they can
// become aliases of shared wire types in one edit. Ironic's bodies (not
// corral's) are in ironic.go and sim.go.

// Server is the subset of Nova's server view the suite reads.
type Server struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Status string  `json:"status"`
	Task   *string `json:"OS-EXT-STS:task_state"`
	Host   *string `json:"OS-EXT-SRV-ATTR:host"`
	Node   *string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	Fault  *struct {
		Message string `json:"message"`
	} `json:"fault"`
}

// ServerBody is the answer to GET /servers/{id}.
type ServerBody struct {
	Server Server `json:"server"`
}

// ServersBody is the answer to GET /servers/detail.
type ServersBody struct {
	Servers []Server `json:"servers"`
}

// CreateServerRequest is the body of POST /servers.
type CreateServerRequest struct {
	Server NewServer `json:"server"`
}

// NewServer is the server a boot asks for.
type NewServer struct {
	Name      string `json:"name"`
	FlavorRef string `json:"flavorRef"`
	ImageRef  string `json:"imageRef"`
}

// CreateServerResponse is the answer to POST /servers: only the new
// server's id is read.
type CreateServerResponse struct {
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
}

// ServerAction is the body of POST /servers/{id}/action: exactly one
// field is set.
type ServerAction struct {
	Stop    *Null    `json:"os-stop,omitempty"`
	Start   *Null    `json:"os-start,omitempty"`
	Reboot  *Reboot  `json:"reboot,omitempty"`
	Rebuild *Rebuild `json:"rebuild,omitempty"`
}

// Reboot is a reboot action; Type is SOFT or HARD.
type Reboot struct {
	Type string `json:"type"`
}

// Rebuild is a rebuild action.
type Rebuild struct {
	ImageRef string `json:"imageRef"`
}

// Null is the JSON null of an action without arguments ({"os-stop": null}).
type Null struct{}

// MarshalJSON writes null.
func (Null) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// CreateFlavorRequest is the body of POST /flavors.
type CreateFlavorRequest struct {
	Flavor Flavor `json:"flavor"`
}

// Flavor is a flavor to create.
type Flavor struct {
	Name  string `json:"name"`
	ID    string `json:"id"`
	VCPUs int    `json:"vcpus"`
	RAM   int    `json:"ram"`
	Disk  int    `json:"disk"`
}

// ExtraSpecsRequest is the body of POST /flavors/{id}/os-extra_specs.
type ExtraSpecsRequest struct {
	ExtraSpecs map[string]string `json:"extra_specs"`
}

// RaftStatus is the subset of GET /v1/cluster/raft the suite reads.
type RaftStatus struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	Leader    string   `json:"leader"`
	Term      uint64   `json:"term"`
	Voters    []string `json:"voters"`
	NonVoters []string `json:"nonvoters"`
}

// HostView is one host of GET /v1/hosts.
type HostView struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Servers int    `json:"servers"`
}

// HostsBody is the answer to GET /v1/hosts.
type HostsBody struct {
	Hosts []HostView `json:"hosts"`
}

// OwnerView is a server's owner in GET /v1/servers/{id}/owner.
type OwnerView struct {
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	HostUp   bool   `json:"host_up"`
	Status   string `json:"status"`
	Task     string `json:"task_state,omitempty"`
	Node     string `json:"node_uuid,omitempty"`
}

// OwnerBody is the answer to GET /v1/servers/{id}/owner.
type OwnerBody struct {
	Owner OwnerView `json:"owner"`
}

// Reservation is one row of GET /v1/reservations.
type Reservation struct {
	NodeUUID       string `json:"node_uuid"`
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

// ReservationsBody is the answer to GET /v1/reservations.
type ReservationsBody struct {
	Reservations []Reservation `json:"reservations"`
}

// MirrorNode is one row of GET /v1/nodes.
type MirrorNode struct {
	UUID          string `json:"uuid"`
	ResourceClass string `json:"resource_class"`
	ReservedBy    string `json:"reserved_by,omitempty"`
}

// NodesBody is the answer to GET /v1/nodes.
type NodesBody struct {
	Nodes []MirrorNode `json:"nodes"`
}

// KeyringPath is corral's operator endpoint of the gossip keyring.
const KeyringPath = "/v1/operator/keyring"

// KeyringStatus is one peer's keyring in GET /v1/operator/keyring.
type KeyringStatus struct {
	Peer    string   `json:"peer"`
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"`
}

// KeyringResponse is the body of every /v1/operator/keyring answer.
type KeyringResponse struct {
	Peers  []KeyringStatus   `json:"peers"`
	Errors map[string]string `json:"errors,omitempty"`
}

// KeyringRequest is the body of POST, PUT and DELETE
// /v1/operator/keyring: the key to install, use or remove.
type KeyringRequest struct {
	Key string `json:"key"`
}
