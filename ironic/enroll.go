package ironic

import (
	"context"
	"errors"
	"net/url"

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
