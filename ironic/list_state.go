package ironic

import (
	"context"
	"net/url"
)

// stateListFields are what ListNodesInState asks for: enough to tell
// where a deploy or undeploy stands. allocation_uuid is left out: Ironic
// answers 500 when a list selects it with ?fields=.
const stateListFields = "uuid,provision_state,target_provision_state,instance_uuid,last_error"

// ListNodesInState returns every node whose provision state is state,
// with only UUID, ProvisionState, TargetProvisionState, InstanceUUID and
// LastError filled in. It is one request per page of PageSize nodes
// (Ironic filters the list server-side with ?provision_state=), so a
// host waiting for many deploys learns where all of them stand in one
// round trip instead of one per node.
func (c *Client) ListNodesInState(ctx context.Context, state string) ([]Node, error) {
	q := url.Values{"provision_state": {state}}
	base := c.sc.ServiceURL("nodes", "detail")
	if c.minor >= mvFields {
		base = c.sc.ServiceURL("nodes")
		q.Set("fields", stateListFields)
	}
	var out []Node
	_, err := listPages[nodePage](ctx, c, listing{call: "ListNodesInState", base: base, query: q}, func(j *nodeJSON) bool {
		out = append(out, j.node())
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PageSize is the number of nodes a listing asks for per request.
func (c *Client) PageSize() int { return c.opts.pageSize }
