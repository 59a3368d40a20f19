package wire

import "encoding/json"

// ComputeVersion is the compute microversion corral's clients speak: a
// server shows the flavor it was built with (Server.Flavor, from 2.47), a
// flavor its description (2.55) and extra specs (2.61), and its swap as a
// number (2.75; "" for none before).
const ComputeVersion = "2.75"

// Link is one of Nova's links (self, bookmark, next).
type Link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// Server is the part of Nova's server view (GET /servers/{id},
// /servers/detail at ComputeVersion) that corral's programs read.
type Server struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Status    string         `json:"status"`
	TaskState string         `json:"OS-EXT-STS:task_state"`
	Host      string         `json:"OS-EXT-SRV-ATTR:host"`
	Node      string         `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	Created   string         `json:"created"`
	Updated   string         `json:"updated"`
	Image     ServerImage    `json:"image"`
	Flavor    ServerFlavor   `json:"flavor"`
	Addresses map[string]any `json:"addresses"`
	Fault     *Fault         `json:"fault"`
}

// ServerImage is the image a server was built from.
type ServerImage struct {
	ID string `json:"id"`
}

// ServerFlavor is the flavor embedded in a server (from microversion 2.47).
type ServerFlavor struct {
	OriginalName string            `json:"original_name"`
	VCPUs        int               `json:"vcpus"`
	RAM          int               `json:"ram"`
	Disk         int               `json:"disk"`
	ExtraSpecs   map[string]string `json:"extra_specs"`
}

// Fault is why a server is in ERROR.
type Fault struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// ServerResponse is the body of GET /servers/{id} and of the answers that
// show a server.
type ServerResponse struct {
	Server Server `json:"server"`
}

// ServersResponse is the body of GET /servers/detail; Links holds the next
// page's link when a limit cut the list.
type ServersResponse struct {
	Servers []Server `json:"servers"`
	Links   []Link   `json:"servers_links,omitempty"`
}

// ServerCreateRequest is Nova's POST /servers body.
type ServerCreateRequest struct {
	Server         *ServerCreate  `json:"server"`
	SchedulerHints map[string]any `json:"os:scheduler_hints,omitempty"`
}

// ServerCreate is a server to boot. Fields corral accepts but has no use
// for on bare metal (security groups, availability zones, ...) are
// accepted and ignored, so that standard clients work.
type ServerCreate struct {
	Name      string `json:"name"`
	ImageRef  string `json:"imageRef"`
	FlavorRef string `json:"flavorRef"`
	// Networks is "auto", "none" or a list of ServerNetwork (required from
	// microversion 2.37): see NetworksAuto, NetworksNone and Networks.
	Networks         json.RawMessage   `json:"networks,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	Description      *string           `json:"description,omitempty"`
	SecurityGroups   []map[string]any  `json:"security_groups,omitempty"`
	KeyName          string            `json:"key_name,omitempty"`
	AvailabilityZone string            `json:"availability_zone,omitempty"`
	UserData         string            `json:"user_data,omitempty"` // base64
	ConfigDrive      *bool             `json:"config_drive,omitempty"`
	AdminPass        string            `json:"adminPass,omitempty"`
	AccessIPv4       string            `json:"accessIPv4,omitempty"`
	AccessIPv6       string            `json:"accessIPv6,omitempty"`
	MinCount         *int              `json:"min_count,omitempty"`
	MaxCount         *int              `json:"max_count,omitempty"`
	Tags             []string          `json:"tags,omitempty"`
}

// ServerNetwork is one network of a boot: a network (UUID) or a port.
type ServerNetwork struct {
	UUID    string `json:"uuid,omitempty"`
	Port    string `json:"port,omitempty"`
	FixedIP string `json:"fixed_ip,omitempty"`
	Tag     string `json:"tag,omitempty"`
}

// The networks words of a boot.
var (
	NetworksAuto = json.RawMessage(`"auto"`)
	NetworksNone = json.RawMessage(`"none"`)
)

// Networks is the networks of a boot attached to the given networks.
func Networks(uuids ...string) json.RawMessage {
	list := make([]ServerNetwork, 0, len(uuids))
	for _, id := range uuids {
		list = append(list, ServerNetwork{UUID: id})
	}
	raw, _ := json.Marshal(list) // cannot fail
	return raw
}

// ServerCreateResponse is the part of the answer to POST /servers that
// names the new server.
type ServerCreateResponse struct {
	Server ServerRef `json:"server"`
}

// ServerRef names a server.
type ServerRef struct {
	ID    string `json:"id"`
	Links []Link `json:"links,omitempty"`
}

// ServerUpdateRequest is PUT /servers/{id}: a rename.
type ServerUpdateRequest struct {
	Server *ServerUpdate `json:"server"`
}

// ServerUpdate is the one field of a server that may change.
type ServerUpdate struct {
	Name *string `json:"name"`
}

// Server actions: POST /servers/{id}/action with a body of exactly one
// of these names and its argument (null for the ones without).
const (
	ActionStop    = "os-stop"
	ActionStart   = "os-start"
	ActionReboot  = "reboot"  // RebootAction
	ActionRebuild = "rebuild" // RebuildAction
	ActionLock    = "lock"    // LockAction, or null
	ActionUnlock  = "unlock"
	// ActionResetState is an admin's, ResetStateAction.
	ActionResetState = "os-resetState"
)

// ResetStateAction is the argument of os-resetState: the state the
// server is set to, "active" or "error".
type ResetStateAction struct {
	State string `json:"state"`
}

// Reboot types.
const (
	RebootSoft = "SOFT"
	RebootHard = "HARD"
)

// RebootAction is the argument of a reboot.
type RebootAction struct {
	Type string `json:"type"` // RebootSoft or RebootHard
}

// RebuildAction is the argument of a rebuild: corral redeploys the node
// with a new image (Name and Metadata are refused).
type RebuildAction struct {
	ImageRef          string            `json:"imageRef"`
	Name              *string           `json:"name,omitempty"`
	AdminPass         string            `json:"adminPass,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	PreserveEphemeral *bool             `json:"preserve_ephemeral,omitempty"`
	DiskConfig        string            `json:"OS-DCF:diskConfig,omitempty"`
}

// LockAction is the argument of a lock; a reason needs microversion 2.73.
type LockAction struct {
	Reason *string `json:"locked_reason,omitempty"`
}
