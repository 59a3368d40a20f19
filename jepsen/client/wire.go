package client

import "github.com/corral-dev/corral/wire"

// The request and response bodies of corral's API that the suite sends or
// reads, and the paths they travel on, are corral's own (package wire,
// which its API serves and its client and CLI send), named here: the
// Nova-compatible API under /compute/v2.1 and the admin API under /v1.
// The rest of the suite names them through this file, never imports wire
// itself, and never spells a body as a map or an anonymous struct. Ironic's
// bodies (not corral's) are in ironic.go and sim.go.
//
// A server's task state, host and node are strings: corral shows an empty
// one as null, which decodes to "", so null and "" mean the same, as they
// always did in the history (history.StateOf).

// The compute API: servers.
type (
	// Server is the part of Nova's server view the suite reads.
	Server = wire.Server
	// ServerResponse is the answer to GET /servers/{id}.
	ServerResponse = wire.ServerResponse
	// ServersResponse is the answer to GET /servers/detail.
	ServersResponse = wire.ServersResponse
	// ServerCreateRequest is the body of POST /servers.
	ServerCreateRequest = wire.ServerCreateRequest
	// ServerCreate is the server a boot asks for.
	ServerCreate = wire.ServerCreate
	// ServerNetwork is one network of a boot: a network (UUID) or a port.
	ServerNetwork = wire.ServerNetwork
	// ServerCreateResponse is the answer to POST /servers: only the new
	// server's id is read.
	ServerCreateResponse = wire.ServerCreateResponse
	// RebootAction is the argument of a reboot (RebootSoft or RebootHard).
	RebootAction = wire.RebootAction
	// RebuildAction is the argument of a rebuild.
	RebuildAction = wire.RebuildAction
)

// Server actions and reboot types.
const (
	ActionStop    = wire.ActionStop
	ActionStart   = wire.ActionStart
	ActionReboot  = wire.ActionReboot
	ActionRebuild = wire.ActionRebuild
	RebootSoft    = wire.RebootSoft
	RebootHard    = wire.RebootHard
)

// ActionRequest is the body of POST /servers/{id}/action: exactly one
// action (ActionStop, ...) with its argument, nil (JSON null) for an
// action without one, as Nova spells it ({"os-stop": null}) and corral's
// own client sends it.
type ActionRequest map[string]any

// Action is the body of one action with its argument (nil for none,
// RebootAction, RebuildAction).
func Action(action string, arg any) ActionRequest { return ActionRequest{action: arg} }

// The compute API: flavors.
type (
	// FlavorCreateRequest is the body of POST /flavors.
	FlavorCreateRequest = wire.FlavorCreateRequest
	// FlavorCreate is a flavor to create.
	FlavorCreate = wire.FlavorCreate
	// ExtraSpecsBody is the body of POST /flavors/{id}/os-extra_specs.
	ExtraSpecsBody = wire.ExtraSpecsBody
)

// NewFlavor is the body of POST /flavors that creates a flavor of the
// suite: name and id id, vcpus, ram and disk 1 (the suite's flavor and
// the probe writes).
func NewFlavor(id string) FlavorCreateRequest {
	return FlavorCreateRequest{Flavor: &FlavorCreate{Name: new(id), ID: new(id), VCPUs: new(1), RAM: new(1), Disk: new(1)}}
}

// The admin API.
type (
	// RaftStatus is the answer to GET /v1/cluster/raft.
	RaftStatus = wire.RaftStatus
	// HostView is one host of GET /v1/hosts.
	HostView = wire.HostView
	// HostsResponse is the answer to GET /v1/hosts.
	HostsResponse = wire.HostsResponse
	// OwnerView is a server's owner in GET /v1/servers/{id}/owner.
	OwnerView = wire.OwnerView
	// OwnerResponse is the answer to GET /v1/servers/{id}/owner.
	OwnerResponse = wire.OwnerResponse
	// Reservation is one row of GET /v1/reservations.
	Reservation = wire.Reservation
	// ReservationsResponse is the answer to GET /v1/reservations.
	ReservationsResponse = wire.ReservationsResponse
	// NodeView is one row of GET /v1/nodes, corral's mirror of Ironic.
	NodeView = wire.NodeView
	// NodesResponse is the answer to GET /v1/nodes.
	NodesResponse = wire.NodesResponse
	// KeyringStatus is one peer's keyring in the answers on KeyringPath.
	KeyringStatus = wire.KeyringStatus
	// KeyringResponse is the body of every answer on KeyringPath.
	KeyringResponse = wire.KeyringResponse
	// KeyringRequest is the body of POST, PUT and DELETE on KeyringPath:
	// the key to install, use or remove.
	KeyringRequest = wire.KeyringRequest
)

// Host statuses in HostView.Status.
const (
	HostUp = wire.HostUp
)

// Paths.
const (
	ServersPath       = wire.ServersPath
	ServersDetailPath = wire.ServersPath + "/detail"
	FlavorsPath       = wire.FlavorsPath
	RaftPath          = wire.RaftPath
	HostsPath         = wire.HostsPath
	NodesPath         = wire.NodesPath
	ReservationsPath  = wire.ReservationsPath
	KeyringPath       = wire.KeyringPath
)

// ServerPath is one server of the compute API.
func ServerPath(id string) string { return wire.ServerPath(id) }

// ServerActionPath is where a server's actions are sent.
func ServerActionPath(id string) string { return wire.ServerActionPath(id) }

// ExtraSpecsPath is a flavor's extra specs.
func ExtraSpecsPath(flavorID string) string { return wire.ExtraSpecsPath(flavorID) }

// OwnerPath explains who owns a server.
func OwnerPath(serverID string) string { return wire.OwnerPath(serverID) }
