package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/corral-dev/corral/wire"
)

// Members lists the peers: gossip status and raft role.
func (c *Client) Members(ctx context.Context) ([]wire.Member, error) {
	var resp wire.MembersResponse
	err := c.admin(ctx, http.MethodGet, wire.MembersPath, nil, nil, &resp)
	return resp.Members, err
}

// RaftStatus is the answering peer's view of raft.
func (c *Client) RaftStatus(ctx context.Context) (wire.RaftStatus, error) {
	var st wire.RaftStatus
	err := c.admin(ctx, http.MethodGet, wire.RaftPath, nil, nil, &st)
	return st, err
}

// Leave makes the peer at Addr leave the cluster cleanly and exit.
func (c *Client) Leave(ctx context.Context) (wire.LeaveResponse, error) {
	var resp wire.LeaveResponse
	err := c.admin(ctx, http.MethodPost, wire.LeavePath, nil, nil, &resp)
	return resp, err
}

// ListHosts lists the compute hosts and the cloud's bare-metal capacity.
func (c *Client) ListHosts(ctx context.Context) (wire.HostsResponse, error) {
	var resp wire.HostsResponse
	err := c.admin(ctx, http.MethodGet, wire.HostsPath, nil, nil, &resp)
	return resp, err
}

// GetHost reads one compute host.
func (c *Client) GetHost(ctx context.Context, name string) (wire.HostView, error) {
	var resp wire.HostResponse
	err := c.admin(ctx, http.MethodGet, wire.HostPath(name), nil, nil, &resp)
	return resp.Host, err
}

// DrainHost keeps new servers off a host and has the leader move its
// servers away.
func (c *Client) DrainHost(ctx context.Context, name string) (wire.HostView, error) {
	return c.hostAction(ctx, name, "drain")
}

// UndrainHost lets a drained host take servers again.
func (c *Client) UndrainHost(ctx context.Context, name string) (wire.HostView, error) {
	return c.hostAction(ctx, name, "undrain")
}

// ForceDownHost marks a host known to be dead down now; its servers move.
func (c *Client) ForceDownHost(ctx context.Context, name string) (wire.HostView, error) {
	return c.hostAction(ctx, name, "force-down")
}

func (c *Client) hostAction(ctx context.Context, name, action string) (wire.HostView, error) {
	var resp wire.HostResponse
	err := c.admin(ctx, http.MethodPost, wire.HostPath(name)+"/"+action, nil, nil, &resp)
	return resp.Host, err
}

// ListNodes lists the Ironic nodes as the cluster mirrors them.
func (c *Client) ListNodes(ctx context.Context) ([]wire.NodeView, error) {
	var resp wire.NodesResponse
	err := c.admin(ctx, http.MethodGet, wire.NodesPath, nil, nil, &resp)
	return resp.Nodes, err
}

// ListReservations lists the committed node reservations.
func (c *Client) ListReservations(ctx context.Context) ([]wire.Reservation, error) {
	var resp wire.ReservationsResponse
	err := c.admin(ctx, http.MethodGet, wire.ReservationsPath, nil, nil, &resp)
	return resp.Reservations, err
}

// ListNetworks lists the networks servers are attached to.
func (c *Client) ListNetworks(ctx context.Context) ([]wire.NetworkView, error) {
	var resp wire.NetworksResponse
	err := c.admin(ctx, http.MethodGet, wire.NetworksPath, nil, nil, &resp)
	return resp.Networks, err
}

// ServerOwner explains who owns a server: host, epoch, the log index that
// set them, and why.
func (c *Client) ServerOwner(ctx context.Context, serverID string) (wire.OwnerView, error) {
	var resp wire.OwnerResponse
	err := c.admin(ctx, http.MethodGet, wire.OwnerPath(serverID), nil, nil, &resp)
	return resp.Owner, err
}

// MoveServer gives a server to another host (the old owner is fenced out).
func (c *Client) MoveServer(ctx context.Context, serverID, host string) (wire.OwnerView, error) {
	var resp wire.OwnerResponse
	err := c.admin(ctx, http.MethodPost, wire.MovePath(serverID), nil, wire.MoveRequest{Host: host}, &resp)
	return resp.Owner, err
}

// PlanRebalance shows what a host's death or drain would move now.
func (c *Client) PlanRebalance(ctx context.Context, host string) (wire.RebalancePlan, error) {
	var plan wire.RebalancePlan
	err := c.admin(ctx, http.MethodGet, wire.RebalancePath, url.Values{"host": {host}}, nil, &plan)
	return plan, err
}

// SelectFlavorMigration lists the bare-metal servers an Ironic flavor
// migration covers (req without ServerIDs).
func (c *Client) SelectFlavorMigration(ctx context.Context, req wire.MigrationRequest) (wire.MigrationSelection, error) {
	var sel wire.MigrationSelection
	err := c.admin(ctx, http.MethodPost, wire.FlavorMigrationPath, nil, req, &sel)
	return sel, err
}

// MigrateFlavors migrates one batch of servers to the resource class, in
// one log entry.
func (c *Client) MigrateFlavors(ctx context.Context, resourceClass string, serverIDs []string) (wire.MigrationResult, error) {
	var res wire.MigrationResult
	err := c.admin(ctx, http.MethodPost, wire.FlavorMigrationPath, nil,
		wire.MigrationRequest{ResourceClass: resourceClass, ServerIDs: serverIDs}, &res)
	return res, err
}

// AdoptServer commits an instance already deployed on an Ironic node as a
// server ACTIVE on it; adopting it again answers Adopted false.
func (c *Client) AdoptServer(ctx context.Context, req wire.AdoptServerRequest) (wire.AdoptServerResponse, error) {
	var resp wire.AdoptServerResponse
	err := c.admin(ctx, http.MethodPost, wire.AdoptServerPath, nil, req, &resp)
	return resp, err
}

// Keyring applies one gossip keyring operation on every live member: GET
// lists, POST installs key, PUT makes it primary, DELETE removes it. The
// members on which it failed are in the answer's Errors.
func (c *Client) Keyring(ctx context.Context, method, key string) (wire.KeyringResponse, error) {
	var in any
	if method != http.MethodGet {
		in = wire.KeyringRequest{Key: key}
	}
	var resp wire.KeyringResponse
	err := c.do(ctx, method, wire.KeyringPath, in, &resp, nil) // an operation, not a read: no consistency
	return resp, err
}

// RemovePeer removes a dead peer from the raft configuration.
func (c *Client) RemovePeer(ctx context.Context, name string) error {
	return c.admin(ctx, http.MethodPost, wire.RemovePeerPath, nil, wire.RemovePeerRequest{Name: name}, nil)
}

// SaveSnapshot returns a snapshot file of the replicated state, taken by
// the leader.
func (c *Client) SaveSnapshot(ctx context.Context) ([]byte, error) {
	raw, _, err := c.Raw(ctx, http.MethodGet, wire.SnapshotPath, nil)
	return raw, err
}

// RestoreSnapshot replaces the cluster's replicated state with a snapshot
// file and returns the restored snapshot's header.
func (c *Client) RestoreSnapshot(ctx context.Context, file []byte) (wire.SnapshotHeader, error) {
	var h wire.SnapshotHeader
	out, _, err := c.Raw(ctx, http.MethodPost, wire.SnapshotPath, bytes.NewReader(file))
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(out, &h); err != nil {
		return h, fmt.Errorf("unreadable answer to the restore: %w", err)
	}
	return h, nil
}
