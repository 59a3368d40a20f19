package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/corral-dev/corral/jepsen/internal/pace"
)

// IronicVersion is sent on every request to Ironic.
const IronicVersion = "1.82"

// Ironic speaks Ironic's REST API (the real one or corral's simulator).
type Ironic struct {
	URL  string // root, without /v1
	HTTP *http.Client
}

// IronicNode is the subset of an Ironic node the checks read.
type IronicNode struct {
	UUID           string  `json:"uuid"`
	Name           *string `json:"name"`
	ResourceClass  *string `json:"resource_class"`
	ProvisionState string  `json:"provision_state"`
	PowerState     *string `json:"power_state"`
	InstanceUUID   *string `json:"instance_uuid"`
	AllocationUUID *string `json:"allocation_uuid"`
	Maintenance    bool    `json:"maintenance"`
	UpdatedAt      *string `json:"updated_at"`
}

// IronicAllocation is the subset of an Ironic allocation the checks read.
type IronicAllocation struct {
	UUID          string  `json:"uuid"`
	Name          *string `json:"name"`
	NodeUUID      *string `json:"node_uuid"`
	State         string  `json:"state"`
	ResourceClass string  `json:"resource_class"`
}

// Str is *p, or "" for nil (Ironic's optional fields).
func Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (ir *Ironic) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = ir.URL + path
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", IronicVersion)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ir.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 300 {
		return &ironicError{Code: resp.StatusCode, Msg: fmt.Sprintf("%s %s: HTTP %d: %.300s", method, path, resp.StatusCode, b)}
	}
	if out != nil && len(b) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

type ironicError struct {
	Code int
	Msg  string
}

func (e *ironicError) Error() string { return e.Msg }

// list follows Ironic's "next" links.
func list[T any](ctx context.Context, ir *Ironic, path, key string) ([]T, error) {
	var out []T
	for path != "" {
		var page map[string]json.RawMessage
		if err := ir.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		var items []T
		if err := json.Unmarshal(page[key], &items); err != nil {
			return nil, fmt.Errorf("list %s: %w", key, err)
		}
		out = append(out, items...)
		path = ""
		if raw, ok := page["next"]; ok {
			_ = json.Unmarshal(raw, &path)
		}
	}
	return out, nil
}

// Nodes lists the nodes of a resource class.
func (ir *Ironic) Nodes(ctx context.Context, rc string) ([]IronicNode, error) {
	return list[IronicNode](ctx, ir, "/v1/nodes/detail?resource_class="+url.QueryEscape(rc), "nodes")
}

// Allocations lists the allocations of a resource class.
func (ir *Ironic) Allocations(ctx context.Context, rc string) ([]IronicAllocation, error) {
	return list[IronicAllocation](ctx, ir, "/v1/allocations?resource_class="+url.QueryEscape(rc), "allocations")
}

// Enroll creates n fake-hardware nodes of class rc, brings them to
// available and powered off, and returns their UUIDs.
func (ir *Ironic) Enroll(ctx context.Context, prefix, rc string, n int) ([]string, error) {
	var ids []string
	for i := 0; i < n; i++ {
		var node IronicNode
		if err := ir.do(ctx, http.MethodPost, "/v1/nodes", map[string]any{
			"name": fmt.Sprintf("%s-%02d", prefix, i), "driver": "fake-hardware", "resource_class": rc}, &node); err != nil {
			return ids, err
		}
		ids = append(ids, node.UUID)
	}
	for _, step := range []struct{ target, want string }{{"manage", "manageable"}, {"provide", "available"}} {
		for _, id := range ids {
			if err := ir.provision(ctx, id, step.target); err != nil {
				return ids, err
			}
		}
		for _, id := range ids {
			if err := ir.waitState(ctx, id, step.want); err != nil {
				return ids, err
			}
		}
	}
	for _, id := range ids {
		// Allocations skip nodes whose power state is unknown.
		if err := ir.retry(ctx, func() error {
			return ir.do(ctx, http.MethodPut, "/v1/nodes/"+id+"/states/power", map[string]string{"target": "power off"}, nil)
		}); err != nil {
			return ids, err
		}
	}
	for _, id := range ids {
		if err := ir.waitPower(ctx, id, "power off"); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// retry repeats f while Ironic answers 409 (node locked) or 503.
func (ir *Ironic) retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		ie, ok := err.(*ironicError)
		if err == nil || !ok || (ie.Code != http.StatusConflict && ie.Code != http.StatusServiceUnavailable) {
			return err
		}
		if !pace.Sleep(ctx, 300*time.Millisecond) {
			return err
		}
	}
}

func (ir *Ironic) provision(ctx context.Context, id, target string) error {
	return ir.retry(ctx, func() error {
		return ir.do(ctx, http.MethodPut, "/v1/nodes/"+id+"/states/provision", map[string]string{"target": target}, nil)
	})
}

func (ir *Ironic) node(ctx context.Context, id string) (IronicNode, error) {
	var n IronicNode
	err := ir.do(ctx, http.MethodGet, "/v1/nodes/"+id, nil, &n)
	return n, err
}

func (ir *Ironic) waitState(ctx context.Context, id, want string) error {
	for {
		n, err := ir.node(ctx, id)
		if err == nil && n.ProvisionState == want {
			return nil
		}
		if !pace.Sleep(ctx, 300*time.Millisecond) {
			return fmt.Errorf("node %s did not reach %s (now %s): %v", id, want, n.ProvisionState, err)
		}
	}
}

func (ir *Ironic) waitPower(ctx context.Context, id, want string) error {
	for {
		n, err := ir.node(ctx, id)
		if err == nil && Str(n.PowerState) == want {
			return nil
		}
		if !pace.Sleep(ctx, 300*time.Millisecond) {
			return fmt.Errorf("node %s did not reach power state %s: %v", id, want, err)
		}
	}
}

// Cleanup removes the given nodes and whatever allocations hold them.
func (ir *Ironic) Cleanup(ctx context.Context, rc string, ids []string) error {
	allocs, _ := ir.Allocations(ctx, rc)
	var errs []string
	for _, id := range ids {
		_ = ir.retry(ctx, func() error {
			return ir.do(ctx, http.MethodPut, "/v1/nodes/"+id+"/maintenance", map[string]string{"reason": "jepsen cleanup"}, nil)
		})
		for _, a := range allocs {
			if Str(a.NodeUUID) == id {
				_ = ir.retry(ctx, func() error { return ir.do(ctx, http.MethodDelete, "/v1/allocations/"+a.UUID, nil, nil) })
			}
		}
		if n, err := ir.node(ctx, id); err == nil && n.InstanceUUID != nil {
			_ = ir.retry(ctx, func() error {
				return ir.do(ctx, http.MethodPatch, "/v1/nodes/"+id, []map[string]string{{"op": "remove", "path": "/instance_uuid"}}, nil)
			})
		}
		if err := ir.retry(ctx, func() error { return ir.do(ctx, http.MethodDelete, "/v1/nodes/"+id, nil, nil) }); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, a := range allocs {
		_ = ir.do(ctx, http.MethodDelete, "/v1/allocations/"+a.UUID, nil, nil)
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup: %s", strings.Join(errs, "; "))
	}
	return nil
}
