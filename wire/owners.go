package wire

import "time"

// OwnerResponse is the body of GET /v1/servers/{id}/owner and of the
// answer to POST /v1/servers/{id}/move.
type OwnerResponse struct {
	Owner OwnerView `json:"owner"`
}

// OwnerView explains who owns a server and why.
type OwnerView struct {
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	Index    uint64 `json:"index"` // log index of the entry that set host and epoch
	Reason   string `json:"reason"`
	Since    string `json:"since"`
	HostUp   bool   `json:"host_up"`
	Status   string `json:"status"`
	Task     string `json:"task_state,omitempty"`
	Node     string `json:"node_uuid,omitempty"`
}

// MoveRequest is the body of POST /v1/servers/{id}/move.
type MoveRequest struct {
	Host string `json:"host"`
}

// RebalancePlan is the body of GET /v1/plan/rebalance?host=NAME: what a
// host's death or drain would move now (a dry run).
type RebalancePlan struct {
	Host         string         `json:"host"`
	Moves        []Move         `json:"moves"`
	ServersAfter map[string]int `json:"servers_after"`
}

// Move is one server of a reassignment plan.
type Move struct {
	ServerID  string `json:"server_id"`
	FromHost  string `json:"from_host"`
	FromEpoch uint64 `json:"from_epoch"`
	ToHost    string `json:"to_host"`
}

// MigrationRequest selects servers for the Ironic flavor migration, or
// (with ServerIDs) migrates one batch.
type MigrationRequest struct {
	ResourceClass string   `json:"resource_class"` // Ironic's class (baremetal-gold) or Placement's (CUSTOM_BAREMETAL_GOLD)
	All           bool     `json:"all,omitempty"`
	Host          string   `json:"host,omitempty"`
	Node          string   `json:"node,omitempty"`
	ServerIDs     []string `json:"server_ids,omitempty"`
}

// MigrationSelection answers a MigrationRequest without ServerIDs: the
// bare-metal servers in scope.
type MigrationSelection struct {
	ResourceClass string            `json:"resource_class"`
	Servers       []MigrationServer `json:"servers"`
}

// MigrationServer is one bare-metal server in scope.
type MigrationServer struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Host     string `json:"host"`
	Node     string `json:"node"`
	Migrated bool   `json:"migrated"`
}

// MigrationResult answers a MigrationRequest with ServerIDs: how many of
// them this batch migrated.
type MigrationResult struct {
	Migrated      int    `json:"migrated"`
	ResourceClass string `json:"resource_class"`
}

// AdoptServerRequest is the body of POST /v1/manage/adopt-server.
type AdoptServerRequest struct {
	ID             string            `json:"id"` // the instance's uuid
	Name           string            `json:"name"`
	Flavor         AdoptedFlavor     `json:"flavor"` // embedded in the server
	ImageRef       string            `json:"image_ref"`
	NodeUUID       string            `json:"node_uuid"`
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	ProjectID      string            `json:"project_id,omitempty"`
	UserID         string            `json:"user_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// AdoptedFlavor is the flavor an adopted server keeps, in corral's own
// terms (not Nova's view).
type AdoptedFlavor struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	VCPUs       int               `json:"vcpus"`
	RAM         int               `json:"ram"`       // MiB
	Disk        int               `json:"disk"`      // GiB
	Ephemeral   int               `json:"ephemeral"` // GiB
	Swap        int               `json:"swap"`      // MiB
	RxTxFactor  float64           `json:"rxtx_factor"`
	IsPublic    bool              `json:"is_public"`
	Description string            `json:"description,omitempty"`
	ExtraSpecs  map[string]string `json:"extra_specs,omitempty"`
	Access      []string          `json:"access,omitempty"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// AdoptServerResponse is the answer: the server's owner view and whether
// this request committed it (false: it was adopted before).
type AdoptServerResponse struct {
	Server  OwnerView `json:"server"`
	Adopted bool      `json:"adopted"`
}
