package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/ironic"
)

// ironicBaremetal is the os-baremetal-nodes proxy's view of Ironic.
type ironicBaremetal struct {
	ir *ironic.Client
}

// Which credentials the os-baremetal-nodes proxy presents to Ironic for a
// caller with a Keystone token ([ironic] baremetal_proxy_auth).
const (
	proxyAuthUser    = "user"    // the caller's own token (Nova's proxy forwarded it), with auth_type password
	proxyAuthService = "service" // corral's [ironic] credentials
)

// baremetalSource is the proxy's source in an agent: the API starts before
// the agent has reached Ironic, so it answers 503 until set is called
// with the connected client. With forward, a caller's Keystone token goes
// to Ironic, which answers with the caller's rights; every other request
// (a caller with one of corral's static tokens) is made with the client's
// own credentials.
type baremetalSource struct {
	forward bool
	p       atomic.Pointer[ironic.Client]
}

var _ nova.BaremetalNodes = (*baremetalSource)(nil)

// newBaremetalSource forwards callers' tokens when Ironic judges Keystone
// tokens (auth_type password) and baremetal_proxy_auth is user.
func newBaremetalSource(cfg ironicConfig) *baremetalSource {
	return &baremetalSource{forward: cfg.Auth.Type == ironic.AuthPassword && cfg.ProxyAuth != proxyAuthService}
}

// set gives the source its connected Ironic client.
func (b *baremetalSource) set(c *ironic.Client) { b.p.Store(c) }

func (b *baremetalSource) get(token string) (ironicBaremetal, error) {
	c := b.p.Load()
	if c == nil {
		return ironicBaremetal{}, fmt.Errorf("%w: this peer has not reached Ironic yet; retry", cluster.ErrNotReady)
	}
	if b.forward && token != "" {
		c = c.WithToken(token)
	}
	return ironicBaremetal{ir: c}, nil
}

// refused turns Ironic's refusal of a forwarded token into the caller's:
// 401 (Keystone no longer takes the token) or 403 (Ironic's policy does
// not let the caller do it).
func (b *baremetalSource) refused(token string, err error) error {
	if err == nil || !b.forward || token == "" {
		return err
	}
	switch ironic.StatusOf(err) {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w: Ironic refused your token: %w", core.ErrUnauthorized, err)
	case http.StatusForbidden:
		return fmt.Errorf("%w: Ironic's policy does not let your token do this: %w", core.ErrForbidden, err)
	}
	return err
}

// BaremetalNodes implements nova.BaremetalNodes.
func (b *baremetalSource) BaremetalNodes(ctx context.Context, token string) ([]nova.BaremetalNode, error) {
	ib, err := b.get(token)
	if err != nil {
		return nil, err
	}
	nodes, err := ib.BaremetalNodes(ctx)
	return nodes, b.refused(token, err)
}

// BaremetalNode implements nova.BaremetalNodes.
func (b *baremetalSource) BaremetalNode(ctx context.Context, id, token string) (nova.BaremetalNode, error) {
	ib, err := b.get(token)
	if err != nil {
		return nova.BaremetalNode{}, err
	}
	n, err := ib.BaremetalNode(ctx, id)
	return n, b.refused(token, err)
}

func baremetalFromNode(n ironic.Node, ports []ironic.Port) nova.BaremetalNode {
	num := func(k string) int64 {
		v, _ := strconv.ParseFloat(strings.TrimSpace(n.Properties[k]), 64)
		return int64(v)
	}
	out := nova.BaremetalNode{UUID: n.UUID, ProvisionState: n.ProvisionState, InstanceUUID: n.InstanceUUID,
		CPUs: num("cpus"), MemoryMB: num("memory_mb"), LocalGB: num("local_gb")}
	for _, p := range ports {
		out.MACs = append(out.MACs, p.Address)
	}
	return out
}

// BaremetalNodes lists every node with its ports.
func (b ironicBaremetal) BaremetalNodes(ctx context.Context) ([]nova.BaremetalNode, error) {
	nodes, err := b.ir.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	ports, err := b.ir.ListPorts(ctx, "")
	if err != nil {
		return nil, err
	}
	byNode := map[string][]ironic.Port{}
	for _, p := range ports {
		byNode[p.NodeUUID] = append(byNode[p.NodeUUID], p)
	}
	out := make([]nova.BaremetalNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, baremetalFromNode(n, byNode[n.UUID]))
	}
	return out, nil
}

// BaremetalNode reads one node with its ports.
func (b ironicBaremetal) BaremetalNode(ctx context.Context, id string) (nova.BaremetalNode, error) {
	n, err := b.ir.GetNode(ctx, id)
	if errors.Is(err, ironic.ErrNotFound) {
		return nova.BaremetalNode{}, fmt.Errorf("%w: %w", nova.ErrBaremetalNodeNotFound, err)
	}
	if err != nil {
		return nova.BaremetalNode{}, err
	}
	ports, err := b.ir.ListPorts(ctx, n.UUID)
	if err != nil {
		return nova.BaremetalNode{}, err
	}
	return baremetalFromNode(n, ports), nil
}
