package wire

import "net/url"

// Prefixes of the three APIs corral serves.
const (
	// ComputePrefix is the Nova-compatible compute API (microversions 2.1
	// to 2.79).
	ComputePrefix = "/compute/v2.1"
	// LegacyComputePrefix is where Nova's legacy v2.0 compute API lives:
	// corral answers only its version document there.
	LegacyComputePrefix = "/compute/v2"
	// PlacementPrefix is the read-only Placement subset.
	PlacementPrefix = "/placement"
	// AdminPrefix is the native admin API.
	AdminPrefix = "/v1"
)

// Collections of the compute API.
const (
	ServersPath  = ComputePrefix + "/servers"
	FlavorsPath  = ComputePrefix + "/flavors"
	KeyPairsPath = ComputePrefix + "/os-keypairs"
)

// Endpoints of the native admin API.
const (
	MembersPath      = AdminPrefix + "/cluster/members"
	RaftPath         = AdminPrefix + "/cluster/raft"
	LeavePath        = AdminPrefix + "/agent/leave"
	HostsPath        = AdminPrefix + "/hosts"
	NodesPath        = AdminPrefix + "/nodes"
	ReservationsPath = AdminPrefix + "/reservations"
	NetworksPath     = AdminPrefix + "/networks"
	// OwnersPath is the collection of GET {id}/owner and POST {id}/move.
	OwnersPath          = AdminPrefix + "/servers"
	RebalancePath       = AdminPrefix + "/plan/rebalance"
	FlavorMigrationPath = AdminPrefix + "/manage/ironic-flavor-migration"
	// AdoptServerPath commits an instance already deployed on an Ironic
	// node (brought over from another deployment) as a server ACTIVE on it.
	AdoptServerPath = AdminPrefix + "/manage/adopt-server"
	// KeyringPath is the gossip keyring of every live member.
	KeyringPath = AdminPrefix + "/operator/keyring"
	// RemovePeerPath removes a dead peer from the raft configuration.
	RemovePeerPath = AdminPrefix + "/operator/raft/remove-peer"
	// SnapshotPath saves (GET) or restores (POST) the replicated state.
	SnapshotPath = AdminPrefix + "/operator/snapshot"
	// OpenAPIPath is the OpenAPI document of the admin API.
	OpenAPIPath = AdminPrefix + "/openapi.json"
)

// ServerPath is one server of the compute API.
func ServerPath(id string) string { return ServersPath + "/" + url.PathEscape(id) }

// ServerActionPath is where a server's actions are sent.
func ServerActionPath(id string) string { return ServerPath(id) + "/action" }

// FlavorPath is one flavor of the compute API.
func FlavorPath(id string) string { return FlavorsPath + "/" + url.PathEscape(id) }

// ExtraSpecsPath is a flavor's extra specs.
func ExtraSpecsPath(flavorID string) string { return FlavorPath(flavorID) + "/os-extra_specs" }

// ExtraSpecPath is one extra spec of a flavor.
func ExtraSpecPath(flavorID, key string) string {
	return ExtraSpecsPath(flavorID) + "/" + url.PathEscape(key)
}

// HostPath is one compute host of the admin API.
func HostPath(name string) string { return HostsPath + "/" + url.PathEscape(name) }

// OwnerPath explains who owns a server.
func OwnerPath(serverID string) string { return OwnersPath + "/" + url.PathEscape(serverID) + "/owner" }

// MovePath gives a server a new owner.
func MovePath(serverID string) string { return OwnersPath + "/" + url.PathEscape(serverID) + "/move" }
