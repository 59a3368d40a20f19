package ironic

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// listing is one of Ironic's marker-paged collections (nodes, allocations,
// ports), read by listPages.
type listing struct {
	call   string
	base   string     // the collection's URL
	query  url.Values // filters and fields; limit and marker are the pager's
	limit  int        // page size, at most the client's (0: the client's)
	marker string     // start after this item (its UUID)
}

// page is the document of one page whose items are Ts.
type page[T any] interface {
	items() []T
	nextLink() string
}

// item is what the pager needs of an item: its UUID, the marker of the
// page after it.
type item interface{ uuid() string }

// listPages reads l page by page and calls visit with each item, in
// Ironic's order, until the last page or until visit returns false. It
// returns asOf: Ironic's clock when it answered the first page (its Date
// header, to the second; zero without one).
//
// Ironic links each full page to the next; the pager keeps its own URL and
// query (the link is built from the host Ironic saw and does not repeat
// every filter) and takes only the link's marker, else the last item's
// UUID. A marker seen twice ends the listing with an error, not a loop.
func listPages[P any, T item, PP interface {
	*P
	page[T]
}](ctx context.Context, c *Client, l listing, visit func(*T) bool) (asOf time.Time, err error) {
	limit := c.opts.pageSize
	if l.limit > 0 {
		limit = min(l.limit, limit)
	}
	q := url.Values{}
	for k, v := range l.query {
		q[k] = v
	}
	q.Set("limit", strconv.Itoa(limit))
	if l.marker != "" {
		q.Set("marker", l.marker)
	}
	seen := map[string]bool{}
	for {
		var pg P
		u := l.base + "?" + q.Encode()
		err := c.do(ctx, l.call, true, func(ctx context.Context) error {
			resp, err := c.sc.Get(ctx, u, PP(&pg), nil)
			if err == nil && resp != nil && asOf.IsZero() {
				asOf, _ = http.ParseTime(resp.Header.Get("Date"))
			}
			return err
		})
		if err != nil {
			return time.Time{}, err
		}
		items := PP(&pg).items()
		for i := range items {
			if !visit(&items[i]) {
				return asOf, nil
			}
		}
		next := PP(&pg).nextLink()
		if next == "" || len(items) == 0 {
			return asOf, nil
		}
		marker := items[len(items)-1].uuid()
		if nu, err := url.Parse(next); err == nil && nu.Query().Get("marker") != "" {
			marker = nu.Query().Get("marker")
		}
		if seen[marker] {
			return time.Time{}, newError(l.call, nil, "pagination loops at marker %s", marker)
		}
		seen[marker] = true
		q.Set("marker", marker)
	}
}
