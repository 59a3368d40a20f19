package ironic

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ListNodes returns every node, following Ironic's pagination. It reads /v1/nodes/detail:
// Ironic cannot select allocation_uuid with ?fields= on a list (HTTP 500). ListNodesBrief
// reads less.
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	nodes, _, err := c.ListNodesSorted(ctx, ListOptions{})
	return nodes, err
}

// Sort keys and directions of ListOptions (Ironic's sort_key and sort_dir).
const (
	SortByID        = "id"         // creation order (Ironic's default)
	SortByCreatedAt = "created_at" // never null
	SortByUpdatedAt = "updated_at" // null for nodes never changed since created
	SortAsc         = "asc"
	SortDesc        = "desc"
)

// ListOptions shapes a node listing.
//
// Ironic orders by SortKey then by its internal id, in SortDir for both, and pages with
// the last node of a page as marker. Its pagination leaves out every node whose SortKey is
// null after a marker whose SortKey is not (and after a null marker it returns only the
// nodes of lower id, whatever their SortKey): a listing by updated_at reaches the nodes
// never updated only when they sort first, so a caller that needs them lists by
// created_at as well. Where nulls sort depends on Ironic's database (first in an ascending
// order on SQLite and MySQL, last on PostgreSQL).
type ListOptions struct {
	SortKey string // default SortByID
	SortDir string // default SortAsc
	// Limit is the page size (default and maximum: the client's page size).
	Limit int
	// Marker, when set, starts the listing after this node (UUID).
	Marker string
	// Until, when set, ends the listing at the first node for which it returns true: that
	// node and those after it are not returned, and no further page is read.
	Until func(Node) bool
}

// ListNodesSorted returns the nodes of /v1/nodes/detail in the order opts asks for, page
// by page until the last page or until opts.Until stops it, and asOf: Ironic's clock when
// it answered the first page (its Date header, to the second; zero without one). A change
// committed after that answer is stamped at asOf or later, save for the clock differences
// between Ironic's hosts and the time a transaction takes to commit.
func (c *Client) ListNodesSorted(ctx context.Context, opts ListOptions) (nodes []Node, asOf time.Time, err error) {
	return c.listNodes(ctx, "ListNodes", c.sc.ServiceURL("nodes", "detail"), url.Values{}, opts)
}

// listNodes pages through the node list at base with the query q and opts.
func (c *Client) listNodes(ctx context.Context, call, base string, q url.Values, opts ListOptions) (nodes []Node, asOf time.Time, err error) {
	limit := c.opts.pageSize
	if opts.Limit > 0 {
		limit = min(opts.Limit, limit)
	}
	q.Set("limit", strconv.Itoa(limit))
	if opts.SortKey != "" {
		q.Set("sort_key", opts.SortKey)
	}
	if opts.SortDir != "" {
		q.Set("sort_dir", opts.SortDir)
	}
	if opts.Marker != "" {
		q.Set("marker", opts.Marker)
	}
	var out []Node
	seen := map[string]bool{}
	for {
		var page struct {
			Nodes []nodeJSON `json:"nodes"`
			Next  string     `json:"next"`
		}
		u := base + "?" + q.Encode()
		err := c.do(ctx, call, true, func(ctx context.Context) error {
			resp, err := c.sc.Get(ctx, u, &page, nil)
			if err == nil && resp != nil && asOf.IsZero() {
				asOf, _ = http.ParseTime(resp.Header.Get("Date"))
			}
			return err
		})
		if err != nil {
			return nil, time.Time{}, err
		}
		for i := range page.Nodes {
			n := page.Nodes[i].node()
			if opts.Until != nil && opts.Until(n) {
				return out, asOf, nil
			}
			out = append(out, n)
		}
		if page.Next == "" || len(page.Nodes) == 0 {
			return out, asOf, nil
		}
		// The next link is built from the host Ironic saw; keep our endpoint and take its marker.
		marker := page.Nodes[len(page.Nodes)-1].UUID
		if nu, err := url.Parse(page.Next); err == nil && nu.Query().Get("marker") != "" {
			marker = nu.Query().Get("marker")
		}
		if seen[marker] {
			return nil, time.Time{}, newError(call, nil, "pagination loops at marker %s", marker)
		}
		seen[marker] = true
		q.Set("marker", marker)
	}
}

// ListNodesBrief returns every node like ListNodes, in creation order, with asOf as
// ListNodesSorted, reading a fraction of the bytes: the nodes with ?fields= (every field of
// Node but its timestamps, which ?fields= cannot select), and their allocation_uuid from a
// listing of the allocations (Ironic answers 500 to allocation_uuid in a node list's
// fields). The two listings are two moments: a node whose allocation was created or deleted
// between them may show its instance_uuid and its allocation_uuid out of step until it is
// listed again (either one set keeps it from new instances). Without ?fields= (API 1.8) it
// is ListNodes.
func (c *Client) ListNodesBrief(ctx context.Context) (nodes []Node, asOf time.Time, err error) {
	if c.minor < mvFields {
		return c.ListNodesSorted(ctx, ListOptions{})
	}
	var fields []string
	for _, f := range strings.Split(c.fieldsParam(), ",") {
		if f != "allocation_uuid" && f != "provision_updated_at" {
			fields = append(fields, f)
		}
	}
	nodes, asOf, err = c.listNodes(ctx, "ListNodes", c.sc.ServiceURL("nodes"), url.Values{"fields": {strings.Join(fields, ",")}}, ListOptions{})
	if err != nil || c.minor < mvAllocations {
		return nodes, asOf, err
	}
	byNode, err := c.allocationsByNode(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	for i := range nodes {
		nodes[i].AllocationUUID = byNode[nodes[i].UUID]
	}
	return nodes, asOf, nil
}

// allocationsByNode maps each node that an allocation holds to that allocation's UUID.
func (c *Client) allocationsByNode(ctx context.Context) (map[string]string, error) {
	const call = "ListAllocations"
	q := url.Values{"limit": {strconv.Itoa(c.opts.pageSize)}, "fields": {"uuid,node_uuid"}}
	base := c.sc.ServiceURL("allocations")
	out := map[string]string{}
	seen := map[string]bool{}
	for {
		var page struct {
			Allocations []struct {
				UUID     string  `json:"uuid"`
				NodeUUID *string `json:"node_uuid"`
			} `json:"allocations"`
			Next string `json:"next"`
		}
		if err := c.get(ctx, call, base+"?"+q.Encode(), &page); err != nil {
			return nil, err
		}
		for _, a := range page.Allocations {
			if a.NodeUUID != nil && *a.NodeUUID != "" {
				out[*a.NodeUUID] = a.UUID
			}
		}
		if page.Next == "" || len(page.Allocations) == 0 {
			return out, nil
		}
		marker := page.Allocations[len(page.Allocations)-1].UUID
		if seen[marker] {
			return nil, newError(call, nil, "pagination loops at marker %s", marker)
		}
		seen[marker] = true
		q.Set("marker", marker)
	}
}
