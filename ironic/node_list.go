package ironic

import (
	"context"
	"encoding/json"
	"net/url"
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
	asOf, err = c.VisitNodes(ctx, opts, func(n Node) error {
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return nodes, asOf, nil
}

// VisitNodes is ListNodesSorted node by node: it calls visit with each node, in order, as
// its page is read, and keeps none, so that a caller that keeps only what it needs of a
// listing of 10^5 nodes holds one page at a time. An error from visit ends the listing
// and is returned as is; a failed page after some nodes were visited returns its error
// too (the visited nodes were read from Ironic all the same).
func (c *Client) VisitNodes(ctx context.Context, opts ListOptions, visit func(Node) error) (asOf time.Time, err error) {
	return c.visitNodes(ctx, "ListNodes", c.sc.ServiceURL("nodes", "detail"), url.Values{}, opts, visit)
}

// visitNodes reads the node list at base with the query q and opts.
func (c *Client) visitNodes(ctx context.Context, call, base string, q url.Values, opts ListOptions, visit func(Node) error) (asOf time.Time, err error) {
	if opts.SortKey != "" {
		q.Set("sort_key", opts.SortKey)
	}
	if opts.SortDir != "" {
		q.Set("sort_dir", opts.SortDir)
	}
	l := listing{call: call, base: base, query: q, limit: opts.Limit, marker: opts.Marker}
	var verr error
	asOf, err = listPages[nodePage](ctx, c, l, func(j *nodeJSON) bool {
		n := j.node()
		if opts.Until != nil && opts.Until(n) {
			return false
		}
		verr = visit(n)
		return verr == nil
	})
	if verr != nil {
		return time.Time{}, verr
	}
	if err != nil {
		return time.Time{}, err
	}
	return asOf, nil
}

// nodePage is one page of a node list.
type nodePage struct {
	Nodes []nodeJSON `json:"nodes"`
	Next  string     `json:"next"`
}

func (p *nodePage) items() []nodeJSON { return p.Nodes }
func (p *nodePage) nextLink() string  { return p.Next }
func (p *nodePage) decode(dec *json.Decoder) error {
	return decodeItems(dec, "nodes", &p.Nodes, &p.Next)
}

// ListNodesBrief returns every node like ListNodes, in creation order, with asOf as
// ListNodesSorted, reading a fraction of the bytes (see VisitNodesBrief).
func (c *Client) ListNodesBrief(ctx context.Context) (nodes []Node, asOf time.Time, err error) {
	asOf, err = c.VisitNodesBrief(ctx, func(n Node) error {
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return nodes, asOf, nil
}

// VisitNodesBrief is ListNodesBrief node by node, as VisitNodes is ListNodesSorted. It
// reads the nodes with ?fields= (every field of Node but its timestamps, which ?fields=
// cannot select), and their allocation_uuid from a listing of the allocations read first
// (Ironic answers 500 to allocation_uuid in a node list's fields); asOf is when Ironic
// answered the first of the two listings. They are two moments: a node whose allocation
// was created or deleted between them may show its instance_uuid and its allocation_uuid
// out of step until it is listed again (either one set keeps it from new instances).
// Without ?fields= (API 1.8) it is VisitNodes.
func (c *Client) VisitNodesBrief(ctx context.Context, visit func(Node) error) (asOf time.Time, err error) {
	if c.minor < mvFields {
		return c.VisitNodes(ctx, ListOptions{}, visit)
	}
	var byNode map[string]string
	if c.minor >= mvAllocations {
		if byNode, asOf, err = c.allocationsByNode(ctx); err != nil {
			return time.Time{}, err
		}
	}
	var fields []string
	for _, f := range strings.Split(c.fieldsParam(), ",") {
		if f != "allocation_uuid" && f != "provision_updated_at" {
			fields = append(fields, f)
		}
	}
	nodesAsOf, err := c.visitNodes(ctx, "ListNodes", c.sc.ServiceURL("nodes"), url.Values{"fields": {strings.Join(fields, ",")}}, ListOptions{},
		func(n Node) error {
			n.AllocationUUID = byNode[n.UUID]
			return visit(n)
		})
	if err != nil {
		return time.Time{}, err
	}
	if asOf.IsZero() {
		asOf = nodesAsOf
	}
	return asOf, nil
}

// allocationsByNode maps each node that an allocation holds to that allocation's UUID,
// with asOf as listPages.
func (c *Client) allocationsByNode(ctx context.Context) (out map[string]string, asOf time.Time, err error) {
	out = map[string]string{}
	l := listing{call: "ListAllocations", base: c.sc.ServiceURL("allocations"), query: url.Values{"fields": {"uuid,node_uuid"}}}
	asOf, err = listPages[allocationRefPage](ctx, c, l, func(a *allocationRef) bool {
		if a.NodeUUID != nil && *a.NodeUUID != "" {
			out[*a.NodeUUID] = a.UUID
		}
		return true
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return out, asOf, nil
}

// allocationRef is an allocation listed with only its UUID and node.
type allocationRef struct {
	UUID     string  `json:"uuid"`
	NodeUUID *string `json:"node_uuid"`
}

func (a allocationRef) uuid() string { return a.UUID }

type allocationRefPage struct {
	Allocations []allocationRef `json:"allocations"`
	Next        string          `json:"next"`
}

func (p *allocationRefPage) items() []allocationRef { return p.Allocations }
func (p *allocationRefPage) nextLink() string       { return p.Next }
func (p *allocationRefPage) decode(dec *json.Decoder) error {
	return decodeItems(dec, "allocations", &p.Allocations, &p.Next)
}
