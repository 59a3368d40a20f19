package nova

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// The read-only proxy that replaced Nova's baremetal extension:
// GET /compute/v2.1/os-baremetal-nodes and /os-baremetal-nodes/{id} answer
// in Nova's shape from Ironic; creating or deleting nodes and adding or
// removing interfaces are Ironic's business and answer 404.

// BaremetalNode is an Ironic node as the proxy shows it.
type BaremetalNode struct {
	UUID           string
	ProvisionState string
	InstanceUUID   string
	// CPUs, MemoryMB and LocalGB are the node's properties as Ironic
	// stores them (0 when absent).
	CPUs, MemoryMB, LocalGB int64
	MACs                    []string // its ports' addresses
}

// BaremetalNodes reaches Ironic for the proxy. token is the caller's
// Keystone token, which the source may forward so that Ironic answers
// with the caller's rights; it is empty for a caller with one of corral's
// static tokens, and the source then asks as corral itself.
type BaremetalNodes interface {
	BaremetalNodes(ctx context.Context, token string) ([]BaremetalNode, error)
	BaremetalNode(ctx context.Context, id, token string) (BaremetalNode, error)
}

// BaremetalProxy serves the os-baremetal-nodes routes from a source; a nil
// source answers 404, like a Nova without Ironic.
type BaremetalProxy struct{ Source BaremetalNodes }

// maxBaremetalProxyVersion is the last compute microversion that has the
// proxy (Nova removed it after 2.35).
var maxBaremetalProxyVersion = core.Microversion{Major: 2, Minor: 35}

func (p BaremetalProxy) check(c echo.Context) error {
	if err := core.RequireAdmin(c); err != nil {
		return err
	}
	if v, ok := c.Get(ctxMicroversion).(core.Microversion); ok && maxBaremetalProxyVersion.Less(v) {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf(
			"os-baremetal-nodes was removed after microversion %s: use Ironic's API (openstack baremetal node list)", maxBaremetalProxyVersion))
	}
	if p.Source == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no Ironic is configured on this peer: [ironic] url is empty")
	}
	return nil
}

func baremetalView(n BaremetalNode, withInstance bool) map[string]any {
	ifs := make([]map[string]any, 0, len(n.MACs))
	for _, m := range n.MACs {
		ifs = append(ifs, map[string]any{"address": m})
	}
	v := map[string]any{"id": n.UUID, "interfaces": ifs, "host": "IRONIC MANAGED", "task_state": n.ProvisionState,
		"cpus": n.CPUs, "memory_mb": n.MemoryMB, "disk_gb": n.LocalGB}
	if withInstance {
		var inst any
		if n.InstanceUUID != "" {
			inst = n.InstanceUUID
		}
		v["instance_uuid"] = inst
	}
	return v
}

// List serves GET /compute/v2.1/os-baremetal-nodes.
func (p BaremetalProxy) List(c echo.Context) error {
	if err := p.check(c); err != nil {
		return err
	}
	nodes, err := p.Source.BaremetalNodes(c.Request().Context(), core.CallerOf(c).KeystoneToken)
	if err != nil {
		return fmt.Errorf("listing Ironic's nodes: %w", err)
	}
	out := make([]map[string]any, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, baremetalView(n, false))
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": out})
}

// Show serves GET /compute/v2.1/os-baremetal-nodes/{id}.
func (p BaremetalProxy) Show(c echo.Context) error {
	if err := p.check(c); err != nil {
		return err
	}
	id := c.Param("id")
	n, err := p.Source.BaremetalNode(c.Request().Context(), id, core.CallerOf(c).KeystoneToken)
	if errors.Is(err, ErrBaremetalNodeNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Node %s could not be found.", id))
	}
	if err != nil {
		return fmt.Errorf("reading Ironic node %s: %w", id, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"node": baremetalView(n, true)})
}

// NotSupported serves POST and DELETE on the proxy and its
// add_interface/remove_interface actions: 404, as Nova answers once
// nova-network's baremetal extension is gone.
func (p BaremetalProxy) NotSupported(c echo.Context) error {
	return echo.NewHTTPError(http.StatusNotFound,
		"Command not supported: bare-metal nodes and their interfaces are managed in Ironic (openstack baremetal node create/delete, openstack baremetal port create/delete)")
}
