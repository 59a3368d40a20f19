package nova

import (
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// page is a list request's limit and marker, as Nova pages its lists.
type page struct {
	limit  int    // < 0: no limit
	marker string // the id of the last item of the previous page
}

// Nova pages its lists in two dialects: servers and flavors take
// ?limit=0 as no limit and word a bad limit one way; key pairs (2.35) and
// hypervisors (2.33), paged later, answer an empty page to ?limit=0 and
// word it another.
const (
	limitZeroIsAll   = true
	limitZeroIsEmpty = false
)

// parsePage reads ?limit= and ?marker=.
func parsePage(q url.Values, zeroIsAll bool) (page, error) {
	p := page{limit: -1, marker: q.Get("marker")}
	l := q.Get("limit")
	if l == "" {
		return p, nil
	}
	n, err := strconv.Atoi(l)
	switch {
	case zeroIsAll && (err != nil || n < 0):
		return p, core.BadRequest("limit %q must be a non-negative integer", l)
	case err != nil || n < 0:
		return p, core.BadRequest("Invalid input for query parameters limit. Value: %s. Expected a non-negative integer.", l)
	case zeroIsAll && n == 0:
		return p, nil
	}
	p.limit = n
	return p, nil
}

// pageOf returns the items after the marker that keep accepts (nil: all),
// at most the page's limit of them, and whether one more was left out. A
// marker that names no item is a 400, as in Nova.
func pageOf[T any](all []T, p page, id func(T) string, keep func(T) bool) ([]T, bool, error) {
	start := 0
	if p.marker != "" {
		start = -1
		for i, v := range all {
			if id(v) == p.marker {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, false, core.BadRequest("marker [%s] not found", p.marker)
		}
	}
	var out []T
	for _, v := range all[start:] {
		if keep != nil && !keep(v) {
			continue
		}
		if p.limit >= 0 && len(out) == p.limit {
			return out, true, nil
		}
		out = append(out, v)
	}
	return out, false, nil
}

// nextLinks is the "<collection>_links" of a cut list: the same request
// from after last.
func nextLinks(c echo.Context, last string) []wire.Link {
	nq := url.Values{}
	for k, v := range c.QueryParams() {
		nq[k] = v
	}
	nq.Set("marker", last)
	return []wire.Link{{Rel: "next", Href: core.BaseURL(c) + c.Request().URL.Path + "?" + nq.Encode()}}
}
