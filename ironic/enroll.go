package ironic

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// Enrolling and adopting nodes that were deployed outside corral: the
// calls a migration from another bare-metal deployment needs.

// NodeSpec is a node to enroll (POST /v1/nodes) with a chosen UUID.
type NodeSpec struct {
	UUID          string
	Name          string // optional
	Driver        string // hardware type, e.g. ipmi
	ResourceClass string
	DriverInfo    map[string]any
	Properties    map[string]any
	Extra         map[string]any
}

// CreateNode enrolls a node. A node with the same UUID (or name) that
// exists already is ErrConflict: read it with GetNode.
func (c *Client) CreateNode(ctx context.Context, spec NodeSpec) (Node, error) {
	const call = "CreateNode"
	if spec.UUID == "" || spec.Driver == "" {
		return Node{}, newError(call, ErrInvalid, "a node needs a uuid and a driver")
	}
	body := map[string]any{"uuid": spec.UUID, "driver": spec.Driver}
	if spec.Name != "" {
		body["name"] = spec.Name
	}
	if spec.ResourceClass != "" {
		body["resource_class"] = spec.ResourceClass
	}
	for k, v := range map[string]map[string]any{"driver_info": spec.DriverInfo, "properties": spec.Properties, "extra": spec.Extra} {
		if len(v) > 0 {
			body[k] = v
		}
	}
	var j nodeJSON
	// The UUID is chosen by the caller: a repeated POST cannot create a second node.
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		_, err := c.sc.Post(ctx, c.sc.ServiceURL("nodes"), body, &j, &gophercloud.RequestOpts{OkCodes: []int{201}})
		return err
	})
	if err != nil {
		return Node{}, err
	}
	return j.node(), nil
}

// DeleteNode removes a node. A missing node is success.
func (c *Client) DeleteNode(ctx context.Context, id string) error {
	err := c.do(ctx, "DeleteNode", true, func(ctx context.Context) error {
		_, err := c.sc.Delete(ctx, c.sc.ServiceURL("nodes", url.PathEscape(id)), nil)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// PatchOp is one JSON patch operation on a node ("add", "replace" or
// "remove"; Value is ignored by remove).
type PatchOp struct {
	Op    string
	Path  string
	Value any
}

// UpdateNode applies a JSON patch to a node (retried while the node is locked).
func (c *Client) UpdateNode(ctx context.Context, id string, ops []PatchOp) error {
	if len(ops) == 0 {
		return nil
	}
	up := make(nodes.UpdateOpts, 0, len(ops))
	for _, o := range ops {
		up = append(up, nodes.UpdateOperation{Op: nodes.UpdateOp(o.Op), Path: o.Path, Value: o.Value})
	}
	return c.patchNode(ctx, "UpdateNode", id, up)
}

// Provision verbs of SetProvisionState besides deploy and undeploy.
const (
	VerbManage  = "manage"  // enroll → manageable
	VerbProvide = "provide" // manageable → available
	VerbAdopt   = "adopt"   // manageable → active, for a node deployed outside Ironic
)

// SetProvisionState asks for a provision verb (manage, provide, adopt) and
// does not wait: see WaitProvisionState.
func (c *Client) SetProvisionState(ctx context.Context, nodeID, verb string) error {
	return c.setProvisionState(ctx, "SetProvisionState", nodeID,
		nodes.ProvisionStateOpts{Target: nodes.TargetProvisionState(verb)})
}

// Port is an Ironic port (a NIC of a node).
type Port struct {
	UUID, NodeUUID, Address string
	Extra                   map[string]string // stringified like Node.Properties
}

type portJSON struct {
	UUID     string         `json:"uuid"`
	NodeUUID *string        `json:"node_uuid"`
	Address  string         `json:"address"`
	Extra    map[string]any `json:"extra"`
}

func (j portJSON) port() Port {
	return Port{UUID: j.UUID, NodeUUID: derefStr(j.NodeUUID), Address: strings.ToLower(j.Address), Extra: stringifyMap(j.Extra)}
}

// PortSpec is a port to create.
type PortSpec struct {
	NodeUUID string
	Address  string // MAC
	Extra    map[string]any
}

// CreatePort creates a port. A port with the same MAC that exists already
// is ErrConflict: find it with PortByAddress.
func (c *Client) CreatePort(ctx context.Context, spec PortSpec) (Port, error) {
	const call = "CreatePort"
	if spec.NodeUUID == "" || spec.Address == "" {
		return Port{}, newError(call, ErrInvalid, "a port needs a node and a MAC address")
	}
	body := map[string]any{"node_uuid": spec.NodeUUID, "address": spec.Address}
	if len(spec.Extra) > 0 {
		body["extra"] = spec.Extra
	}
	var j portJSON
	// Ironic refuses a second port with the same MAC: a repeated POST is safe.
	err := c.do(ctx, call, true, func(ctx context.Context) error {
		_, err := c.sc.Post(ctx, c.sc.ServiceURL("ports"), body, &j, &gophercloud.RequestOpts{OkCodes: []int{201}})
		return err
	})
	if err != nil {
		return Port{}, err
	}
	return j.port(), nil
}

// ListPorts returns the ports of one node, or of every node when nodeID is
// empty, following Ironic's pagination.
func (c *Client) ListPorts(ctx context.Context, nodeID string) ([]Port, error) {
	q := url.Values{"limit": {strconv.Itoa(c.opts.pageSize)}}
	if nodeID != "" {
		q.Set("node", nodeID)
	}
	return c.listPorts(ctx, "ListPorts", q)
}

// PortByAddress returns the port with a MAC address, or ErrNotFound.
func (c *Client) PortByAddress(ctx context.Context, mac string) (Port, error) {
	ports, err := c.listPorts(ctx, "PortByAddress", url.Values{"address": {strings.ToLower(mac)}})
	if err != nil {
		return Port{}, err
	}
	for _, p := range ports {
		if strings.EqualFold(p.Address, mac) {
			return p, nil
		}
	}
	return Port{}, newError("PortByAddress", ErrNotFound, "no port has MAC address %s", mac)
}

func (c *Client) listPorts(ctx context.Context, call string, q url.Values) ([]Port, error) {
	base := c.sc.ServiceURL("ports", "detail")
	var out []Port
	seen := map[string]bool{}
	for {
		var page struct {
			Ports []portJSON `json:"ports"`
			Next  string     `json:"next"`
		}
		if err := c.get(ctx, call, base+"?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		for _, p := range page.Ports {
			out = append(out, p.port())
		}
		if page.Next == "" || len(page.Ports) == 0 {
			return out, nil
		}
		marker := page.Ports[len(page.Ports)-1].UUID
		if seen[marker] {
			return nil, newError(call, nil, "pagination loops at marker %s", marker)
		}
		seen[marker] = true
		q.Set("marker", marker)
	}
}

// BackfillAllocation records an allocation for a node that is active with
// an instance_uuid (API 1.58): Ironic gives it the instance's UUID. An
// allocation that exists already for that instance on that node is
// returned as it is. A refused backfill leaves an allocation in state
// error behind in Ironic; it is deleted before the error is returned.
func (c *Client) BackfillAllocation(ctx context.Context, nodeID, instanceUUID string) (Allocation, error) {
	const call = "BackfillAllocation"
	if err := c.needAllocations(call); err != nil {
		return Allocation{}, err
	}
	if c.minor < 58 {
		return Allocation{}, newError(call, ErrUnsupported, "backfilling allocations needs API 1.58, negotiated %s", c.version)
	}
	if a, err := c.getAllocation(ctx, call, instanceUUID); err == nil && a.State == AllocationActive {
		if !strings.EqualFold(a.NodeUUID, nodeID) {
			return Allocation{}, newError(call, ErrConflict, "allocation %s holds node %s, not %s", a.UUID, a.NodeUUID, nodeID)
		}
		return a, nil
	}
	var j allocJSON
	err := c.do(ctx, call, false, func(ctx context.Context) error {
		_, err := c.sc.Post(ctx, c.sc.ServiceURL("allocations"), map[string]any{"node": nodeID}, &j,
			&gophercloud.RequestOpts{OkCodes: []int{201}})
		return err
	})
	if err == nil {
		return j.allocation(), nil
	}
	if a, gerr := c.getAllocation(ctx, call, instanceUUID); gerr == nil {
		switch {
		case a.State == AllocationActive && strings.EqualFold(a.NodeUUID, nodeID):
			return a, nil // created meanwhile (a retry)
		case a.State == AllocationError:
			if derr := c.DeleteAllocation(ctx, a.UUID); derr != nil {
				c.log.Warn("could not delete a failed backfilled allocation", "allocation", a.UUID, "err", derr)
			}
		}
	}
	return Allocation{}, err
}
