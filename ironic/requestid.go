package ironic

import (
	"context"
	"net/http"
)

// HeaderRequestID is the header that carries a caller's request id to an
// OpenStack service: Ironic's request-id middleware keeps a well-formed
// inbound one ("req-" and a UUID) as the global request id it logs beside
// its own, as Nova sends it.
const HeaderRequestID = "X-OpenStack-Request-ID"

type requestIDKey struct{}

// WithRequestID returns ctx whose requests to Ironic carry id in
// HeaderRequestID: the side effects of a user's request reach Ironic under
// that request's id, so Ironic's logs tie each one to it. An empty id
// leaves ctx as it is.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestIDTransport sets HeaderRequestID from the request's context.
type requestIDTransport struct{ base http.RoundTripper }

func (t requestIDTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if id, _ := r.Context().Value(requestIDKey{}).(string); id != "" && r.Header.Get(HeaderRequestID) == "" {
		r = r.Clone(r.Context())
		r.Header.Set(HeaderRequestID, id)
	}
	return t.base.RoundTrip(r)
}

// withRequestIDs returns a copy of hc whose requests carry the request id
// of their context.
func withRequestIDs(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = requestIDTransport{base: base}
	return &c
}
