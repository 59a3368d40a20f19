package ironic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"
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
	// decode reads the page from dec (decodeItems).
	decode(dec *json.Decoder) error
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
			pg = *new(P) // a retried page starts again
			resp, err := c.sc.Get(ctx, u, nil, &gophercloud.RequestOpts{KeepResponseBody: true})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			dec := json.NewDecoder(resp.Body)
			dec.UseNumber() // as gophercloud decodes: integers beyond 2^53 stay exact
			if err := PP(&pg).decode(dec); err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body) // what follows the document, for the connection's reuse
			if asOf.IsZero() {
				asOf, _ = http.ParseTime(resp.Header.Get("Date"))
			}
			return nil
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

// decodeItems reads a page document — an object whose key holds the
// items and whose "next" holds the link to the next page; other keys are
// skipped — from dec item by item, so that the decoder buffers one item
// at a time: read whole, a page of 1,000 nodes is buffered, then decoded,
// and that buffer was most of what a listing of 10^5 nodes left to the
// garbage collector. A null document or items are an empty page.
func decodeItems[T any](dec *json.Decoder, key string, items *[]T, next *string) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('{') {
		return pageShape[T](key, tok)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		switch k {
		case key:
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			if tok == nil {
				continue
			}
			if tok != json.Delim('[') {
				return pageShape[T](key, tok)
			}
			for dec.More() {
				var it T
				if err := dec.Decode(&it); err != nil {
					return err
				}
				*items = append(*items, it)
			}
			if _, err := dec.Token(); err != nil { // ]
				return err
			}
		case "next":
			var link *string
			if err := dec.Decode(&link); err != nil {
				return err
			}
			if link != nil {
				*next = *link
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // }
	return err
}

// pageShape is the error of a page document that is not an object, or
// whose items are not a list: what decoding it whole reported.
func pageShape[T any](key string, tok json.Token) error {
	return &json.UnmarshalTypeError{Value: fmt.Sprint(tok), Type: reflect.TypeFor[[]T](), Field: key}
}
