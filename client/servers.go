package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-dev/corral/wire"
)

// ServerQuery narrows ListServers.
type ServerQuery struct {
	Status string // only servers with this status (ACTIVE, BUILD, ...)
	Host   string // only servers owned by this host
	Name   string // only servers whose name contains this
	// Deleted lists only the deleted servers still retained (deleted_retention),
	// as Nova's deleted=true does for an admin; the live ones need a second list.
	Deleted bool
	// AllTenants lists every project's servers (Keystone admins).
	AllTenants bool
	// Limit and Marker page the list (Limit 0: every server).
	Limit  int
	Marker string
}

func (q ServerQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"status": q.Status, "host": q.Host, "name": q.Name, "marker": q.Marker} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Deleted {
		v.Set("deleted", "true")
	}
	if q.AllTenants {
		v.Set("all_tenants", "1")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// CreateServer boots a server and returns its id and links; it is in
// BUILD until its owner host has deployed it.
func (c *Client) CreateServer(ctx context.Context, s wire.ServerCreate) (wire.ServerRef, error) {
	var resp wire.ServerCreateResponse
	err := c.compute(ctx, http.MethodPost, wire.ServersPath, nil, wire.ServerCreateRequest{Server: &s}, &resp)
	return resp.Server, err
}

// GetServer reads one server (404 for a deleted one).
func (c *Client) GetServer(ctx context.Context, id string) (wire.Server, error) {
	var resp wire.ServerResponse
	err := c.compute(ctx, http.MethodGet, wire.ServerPath(id), nil, nil, &resp)
	return resp.Server, err
}

// ListServers lists servers with details, newest first.
func (c *Client) ListServers(ctx context.Context, q ServerQuery) ([]wire.Server, error) {
	var resp wire.ServersResponse
	err := c.compute(ctx, http.MethodGet, wire.ServersPath+"/detail", q.values(), nil, &resp)
	return resp.Servers, err
}

// DeleteServer deletes a server; its owner host undeploys it.
func (c *Client) DeleteServer(ctx context.Context, id string) error {
	return c.compute(ctx, http.MethodDelete, wire.ServerPath(id), nil, nil, nil)
}

// RenameServer changes a server's name.
func (c *Client) RenameServer(ctx context.Context, id, name string) (wire.Server, error) {
	var resp wire.ServerResponse
	err := c.compute(ctx, http.MethodPut, wire.ServerPath(id), nil, wire.ServerUpdateRequest{Server: &wire.ServerUpdate{Name: &name}}, &resp)
	return resp.Server, err
}

// ServerAction sends one action (wire.ActionStop, ActionReboot, ...) with
// its argument (nil for none; wire.RebootAction, RebuildAction or
// LockAction); the server's owner host carries it out.
func (c *Client) ServerAction(ctx context.Context, id, action string, arg any) error {
	return c.compute(ctx, http.MethodPost, wire.ServerActionPath(id), nil, map[string]any{action: arg}, nil)
}

// StopServer powers a server off.
func (c *Client) StopServer(ctx context.Context, id string) error {
	return c.ServerAction(ctx, id, wire.ActionStop, nil)
}

// StartServer powers a stopped server on.
func (c *Client) StartServer(ctx context.Context, id string) error {
	return c.ServerAction(ctx, id, wire.ActionStart, nil)
}

// RebootServer reboots a server, hard or soft.
func (c *Client) RebootServer(ctx context.Context, id string, hard bool) error {
	typ := wire.RebootSoft
	if hard {
		typ = wire.RebootHard
	}
	return c.ServerAction(ctx, id, wire.ActionReboot, wire.RebootAction{Type: typ})
}

// RebuildServer redeploys a server's node with an image.
func (c *Client) RebuildServer(ctx context.Context, id, imageRef string) error {
	return c.ServerAction(ctx, id, wire.ActionRebuild, wire.RebuildAction{ImageRef: imageRef})
}
