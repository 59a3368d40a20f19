package ironic

import (
	"context"
	"net/url"
	"strconv"
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
	const call = "ListNodesInState"
	q := url.Values{"limit": {strconv.Itoa(c.opts.pageSize)}, "provision_state": {state}}
	base := c.sc.ServiceURL("nodes", "detail")
	if c.minor >= mvFields {
		base = c.sc.ServiceURL("nodes")
		q.Set("fields", stateListFields)
	}
	var out []Node
	seen := map[string]bool{}
	for {
		var page struct {
			Nodes []nodeJSON `json:"nodes"`
			Next  string     `json:"next"`
		}
		if err := c.get(ctx, call, base+"?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		for i := range page.Nodes {
			out = append(out, page.Nodes[i].node())
		}
		// Ironic's next link does not always repeat the filters: keep our
		// query and take only the marker.
		if page.Next == "" || len(page.Nodes) < c.opts.pageSize {
			return out, nil
		}
		marker := page.Nodes[len(page.Nodes)-1].UUID
		if seen[marker] {
			return nil, newError(call, nil, "pagination loops at marker %s", marker)
		}
		seen[marker] = true
		q.Set("marker", marker)
	}
}

// PageSize is the number of nodes a listing asks for per request.
func (c *Client) PageSize() int { return c.opts.pageSize }
