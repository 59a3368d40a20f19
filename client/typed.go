package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/corral-dev/corral/wire"
)

// withQuery adds q and the client's consistency (on reads) to path.
func (c *Client) withQuery(method, path string, q url.Values) string {
	if method == http.MethodGet && c.Consistency != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("consistency", c.Consistency)
	}
	if len(q) == 0 {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + q.Encode()
}

// admin sends a typed call of the admin API.
func (c *Client) admin(ctx context.Context, method, path string, q url.Values, in, out any) error {
	return c.do(ctx, method, c.withQuery(method, path, q), in, out, nil)
}

// compute sends a typed call of the compute API at the client's
// microversion.
func (c *Client) compute(ctx context.Context, method, path string, q url.Values, in, out any) error {
	v := c.ComputeVersion
	if v == "" {
		v = wire.ComputeVersion
	}
	return c.do(ctx, method, c.withQuery(method, path, q), in, out, map[string]string{"OpenStack-API-Version": "compute " + v})
}
