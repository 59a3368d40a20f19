package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/ironic"
)

// ironicBaremetal is the os-baremetal-nodes proxy's view of Ironic.
type ironicBaremetal struct {
	ir *ironic.Client
}

var _ api.BaremetalNodes = ironicBaremetal{}

// baremetalSource is the proxy's source in an agent: the API starts before
// the agent has reached Ironic, so it answers 503 until set is called
// with the connected client. With forwardToken (callers authenticated by
// Keystone), the caller's token goes to Ironic; the client must then use
// baremetalHTTPClient.
type baremetalSource struct {
	forwardToken bool
	p            atomic.Pointer[ironic.Client]
}

var _ api.BaremetalNodes = (*baremetalSource)(nil)

// set gives the source its connected Ironic client.
func (b *baremetalSource) set(c *ironic.Client) { b.p.Store(c) }

func (b *baremetalSource) get(token string) (ironicBaremetal, string, error) {
	c := b.p.Load()
	if c == nil {
		return ironicBaremetal{}, "", fmt.Errorf("%w: this peer has not reached Ironic yet; retry", cluster.ErrNotReady)
	}
	if !b.forwardToken {
		token = ""
	}
	return ironicBaremetal{ir: c}, token, nil
}

// BaremetalNodes implements api.BaremetalNodes.
func (b *baremetalSource) BaremetalNodes(ctx context.Context, token string) ([]api.BaremetalNode, error) {
	ib, tok, err := b.get(token)
	if err != nil {
		return nil, err
	}
	return ib.BaremetalNodes(ctx, tok)
}

// BaremetalNode implements api.BaremetalNodes.
func (b *baremetalSource) BaremetalNode(ctx context.Context, id, token string) (api.BaremetalNode, error) {
	ib, tok, err := b.get(token)
	if err != nil {
		return api.BaremetalNode{}, err
	}
	return ib.BaremetalNode(ctx, id, tok)
}

// callerTokenKey carries the caller's token to the Ironic transport.
type callerTokenKey struct{}

// tokenTransport sends the caller's token (when the request context has
// one) to Ironic as X-Auth-Token: with Keystone, Ironic then answers
// with the caller's rights.
type tokenTransport struct{ base http.RoundTripper }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tok, _ := r.Context().Value(callerTokenKey{}).(string); tok != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Auth-Token", tok)
	}
	return t.base.RoundTrip(r)
}

// baremetalHTTPClient is the HTTP client of an Ironic client that
// forwards callers' tokens.
func baremetalHTTPClient() *http.Client {
	return &http.Client{Transport: tokenTransport{base: ironic.NewTransport()}}
}

func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, callerTokenKey{}, token)
}

func baremetalFromNode(n ironic.Node, ports []ironic.Port) api.BaremetalNode {
	num := func(k string) int64 {
		v, _ := strconv.ParseFloat(strings.TrimSpace(n.Properties[k]), 64)
		return int64(v)
	}
	out := api.BaremetalNode{UUID: n.UUID, ProvisionState: n.ProvisionState, InstanceUUID: n.InstanceUUID,
		CPUs: num("cpus"), MemoryMB: num("memory_mb"), LocalGB: num("local_gb")}
	for _, p := range ports {
		out.MACs = append(out.MACs, p.Address)
	}
	return out
}

// BaremetalNodes implements api.BaremetalNodes.
func (b ironicBaremetal) BaremetalNodes(ctx context.Context, token string) ([]api.BaremetalNode, error) {
	ctx = withToken(ctx, token)
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
	out := make([]api.BaremetalNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, baremetalFromNode(n, byNode[n.UUID]))
	}
	return out, nil
}

// BaremetalNode implements api.BaremetalNodes.
func (b ironicBaremetal) BaremetalNode(ctx context.Context, id, token string) (api.BaremetalNode, error) {
	ctx = withToken(ctx, token)
	n, err := b.ir.GetNode(ctx, id)
	if errors.Is(err, ironic.ErrNotFound) {
		return api.BaremetalNode{}, fmt.Errorf("%w: %w", api.ErrBaremetalNodeNotFound, err)
	}
	if err != nil {
		return api.BaremetalNode{}, err
	}
	ports, err := b.ir.ListPorts(ctx, n.UUID)
	if err != nil {
		return api.BaremetalNode{}, err
	}
	return baremetalFromNode(n, ports), nil
}
