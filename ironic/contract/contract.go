// Package contract holds the contract test suite that runs the same cases against the embedded
// Ironic simulator (ironic/sim) and against a real Ironic, so that the simulator stays faithful.
//
//	go test ./ironic/contract/                                      # simulator only
//	IRONIC_URL=$(scripts/ironic-up.sh) go test ./ironic/contract/   # simulator and real Ironic
package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// Microversion is the API version the suite speaks unless a case says otherwise.
const Microversion = "1.82"

// Env is one Ironic under test.
type Env struct {
	Root    string // root URL, no /v1
	Client  *gophercloud.ServiceClient
	Prefix  string // unique per run: isolates names and resource classes on a shared Ironic
	Real    bool
	Timeout time.Duration // deadline of each wait
	macSeq  atomic.Uint32 // cases run in parallel
	macBase string
}

// NewEnv connects to the Ironic at root (e.g. http://127.0.0.1:6385).
func NewEnv(root string, real bool) (*Env, error) {
	root = strings.TrimSuffix(root, "/")
	c, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: root + "/v1"})
	if err != nil {
		return nil, fmt.Errorf("baremetal client for %s: %w", root, err)
	}
	c.Microversion = Microversion
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("random prefix: %w", err)
	}
	timeout := 10 * time.Second
	if real {
		timeout = 30 * time.Second
	}
	return &Env{
		Root: root, Client: c, Prefix: "ct" + hex.EncodeToString(b[:3]), Real: real, Timeout: timeout,
		macBase: fmt.Sprintf("52:54:%02x:%02x:%02x", b[0], b[1], b[2]),
	}, nil
}

// Name returns a run-unique name (valid as node name, allocation name and resource class).
func (e *Env) Name(s string) string { return e.Prefix + "-" + s }

// MAC returns a run-unique MAC address (256 per run).
func (e *Env) MAC() string {
	return fmt.Sprintf("%s:%02x", e.macBase, byte(e.macSeq.Add(1)))
}

// Raw is a plain HTTP exchange, for checks that need headers or exact bodies.
type Raw struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends a raw request; version "" sends no version header.
func (e *Env) Do(ctx context.Context, method, path, version string, body any) (*Raw, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode body: %w", err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, e.Root+path, rd)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	if version != "" {
		req.Header.Set("X-OpenStack-Ironic-API-Version", version)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", method, path, err)
	}
	return &Raw{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// JSON decodes the raw body.
func (r *Raw) JSON() (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return nil, fmt.Errorf("decode %q: %w", r.Body, err)
	}
	return m, nil
}

// Fault extracts the message of an Ironic error body: the faultstring, or the description of
// an error raised before the API controller.
func Fault(body []byte) string {
	var outer struct {
		ErrorMessage string `json:"error_message"`
	}
	if err := json.Unmarshal(body, &outer); err != nil || outer.ErrorMessage == "" {
		return string(body)
	}
	var inner struct {
		Faultstring *string `json:"faultstring"`
		Description *string `json:"description"`
	}
	if err := json.Unmarshal([]byte(outer.ErrorMessage), &inner); err != nil {
		return outer.ErrorMessage
	}
	switch {
	case inner.Faultstring != nil:
		return *inner.Faultstring
	case inner.Description != nil:
		return *inner.Description
	}
	return outer.ErrorMessage
}

// StatusOf returns the HTTP status of a gophercloud error (0 if it has none) and its fault text.
func StatusOf(err error) (int, string) {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return e.Actual, Fault(e.Body)
	}
	return 0, ""
}

// PutTraits replaces a node's traits (gophercloud has no helper for it).
func (e *Env) PutTraits(ctx context.Context, node string, traits []string) error {
	_, err := e.Client.Put(ctx, e.Client.ServiceURL("nodes", node, "traits"),
		map[string]any{"traits": traits}, nil, &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
	if err != nil {
		return fmt.Errorf("put traits of %s: %w", node, err)
	}
	return nil
}

// Poll calls get every 100 ms until done reports true or the env's deadline passes.
func Poll[T any](ctx context.Context, e *Env, get func(context.Context) (T, error), done func(T) bool) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := get(ctx)
		if err == nil && done(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return v, fmt.Errorf("poll: %w (last error: %w)", ctx.Err(), err)
			}
			return v, fmt.Errorf("poll: %w (last value: %+v)", ctx.Err(), v)
		case <-tick.C:
		}
	}
}

// WaitNode polls a node until it has settled (no target states) and done reports true.
func (e *Env) WaitNode(ctx context.Context, id string, done func(*nodes.Node) bool) (*nodes.Node, error) {
	return Poll(ctx, e, func(ctx context.Context) (*nodes.Node, error) {
		return nodes.Get(ctx, e.Client, id).Extract()
	}, func(n *nodes.Node) bool {
		return n.TargetProvisionState == "" && n.TargetPowerState == "" && done(n)
	})
}

// WaitAllocation polls an allocation until it is no longer allocating.
func (e *Env) WaitAllocation(ctx context.Context, id string) (*allocations.Allocation, error) {
	return Poll(ctx, e, func(ctx context.Context) (*allocations.Allocation, error) {
		return allocations.Get(ctx, e.Client, id).Extract()
	}, func(a *allocations.Allocation) bool { return a.State != "allocating" })
}

// NodeSpec is a node to enroll and make available.
type NodeSpec struct {
	UUID                string // "": Ironic chooses
	Name, ResourceClass string
	Traits              []string
	SkipPowerOff        bool // leave power_state null (allocations then skip the node)
	// NetworkInterface is the node's network_interface ("": Ironic's
	// default), e.g. flat, which a real Ironic only has with [neutron].
	NetworkInterface string
	// Ports are the node's NICs (Ironic ports; NodeUUID is filled in).
	Ports []ports.CreateOpts
	// UUIDs, when set, gives the UUID instead (called when the node is
	// created): while Ironic has a node with the one it gave (409),
	// another is asked for; "" lets Ironic choose.
	UUIDs func() string
}

// createNode creates sp's node, with a UUID of sp.UUIDs while it gives
// one that no node has.
func (e *Env) createNode(ctx context.Context, sp NodeSpec) (*nodes.Node, error) {
	for {
		uuid := sp.UUID
		if sp.UUIDs != nil {
			uuid = sp.UUIDs()
		}
		n, err := nodes.Create(ctx, e.Client, nodes.CreateOpts{
			UUID: uuid, Name: sp.Name, Driver: "fake-hardware", ResourceClass: sp.ResourceClass, NetworkInterface: sp.NetworkInterface,
			Properties: map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100,
				"capabilities": "boot_mode:uefi"},
		}).Extract()
		if sp.UUIDs != nil && uuid != "" && gophercloud.ResponseCodeIs(err, http.StatusConflict) &&
			strings.Contains(err.Error(), "A node with UUID") {
			continue // taken: the next one
		}
		return n, err
	}
}

// Enroll creates the nodes and drives them enroll -> manageable -> available (with power off
// unless SkipPowerOff), step by step for all nodes together. It returns their UUIDs.
func (e *Env) Enroll(ctx context.Context, specs ...NodeSpec) ([]string, error) {
	ids := make([]string, len(specs))
	for i, sp := range specs {
		n, err := e.createNode(ctx, sp)
		if err != nil {
			return nil, fmt.Errorf("create node %s: %w", sp.Name, err)
		}
		ids[i] = n.UUID
		for _, p := range sp.Ports {
			p.NodeUUID = n.UUID
			if _, err := ports.Create(ctx, e.Client, p).Extract(); err != nil {
				return nil, fmt.Errorf("create port %s of node %s: %w", p.Address, sp.Name, err)
			}
		}
		if len(sp.Traits) > 0 {
			if err := e.PutTraits(ctx, n.UUID, sp.Traits); err != nil {
				return nil, err
			}
		}
		if !sp.SkipPowerOff {
			if err := nodes.ChangePowerState(ctx, e.Client, n.UUID,
				nodes.PowerStateOpts{Target: nodes.PowerOff}).ExtractErr(); err != nil {
				return nil, fmt.Errorf("power off %s: %w", sp.Name, err)
			}
		}
	}
	for _, step := range []struct {
		target nodes.TargetProvisionState
		want   string
	}{{nodes.TargetManage, "manageable"}, {nodes.TargetProvide, "available"}} {
		for _, id := range ids {
			// A node is locked while a previous action runs: wait until it has settled.
			if _, err := e.WaitNode(ctx, id, func(*nodes.Node) bool { return true }); err != nil {
				return nil, fmt.Errorf("node %s settling: %w", id, err)
			}
			if err := nodes.ChangeProvisionState(ctx, e.Client, id,
				nodes.ProvisionStateOpts{Target: step.target}).ExtractErr(); err != nil {
				return nil, fmt.Errorf("%s %s: %w", step.target, id, err)
			}
		}
		for _, id := range ids {
			if _, err := e.WaitNode(ctx, id, func(n *nodes.Node) bool { return n.ProvisionState == step.want }); err != nil {
				return nil, fmt.Errorf("node %s to %s: %w", id, step.want, err)
			}
		}
	}
	return ids, nil
}

// Cleanup removes what a case left behind: allocations of the resource classes, deployments
// and reservations of the nodes, then the nodes. Best effort.
func (e *Env) Cleanup(ctx context.Context, resourceClasses []string, nodeIDs []string) {
	for _, rc := range resourceClasses {
		pages, err := allocations.List(e.Client, allocations.ListOpts{ResourceClass: rc}).AllPages(ctx)
		if err != nil {
			continue
		}
		all, _ := allocations.ExtractAllocations(pages)
		for _, a := range all {
			_ = allocations.Delete(ctx, e.Client, a.UUID).ExtractErr()
		}
	}
	for _, id := range nodeIDs {
		if err := nodes.Get(ctx, e.Client, id).Err; gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			continue
		}
		n, err := e.WaitNode(ctx, id, func(*nodes.Node) bool { return true })
		if err != nil {
			continue
		}
		if n.ProvisionState == "active" {
			_ = nodes.ChangeProvisionState(ctx, e.Client, id, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted}).ExtractErr()
			n, _ = e.WaitNode(ctx, id, func(n *nodes.Node) bool { return n.ProvisionState != "active" })
		}
		if n != nil && n.InstanceUUID != "" {
			_, _ = nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
				nodes.UpdateOperation{Op: nodes.RemoveOp, Path: "/instance_uuid"}}).Extract()
		}
		_ = nodes.Delete(ctx, e.Client, id).ExtractErr()
	}
}

// CheckFault asserts that err is an Ironic error with the status and message.
func CheckFault(t testing.TB, err error, status int, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want HTTP %d %q, got success", status, msg)
	}
	got, text := StatusOf(err)
	if got != status || (msg != "" && text != msg) {
		t.Fatalf("want HTTP %d %q, got %d %q (%v)", status, msg, got, text, err)
	}
}
