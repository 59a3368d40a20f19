// Package glance is corral's client of OpenStack's image service: it reads
// one image (GET /v2/images/{id}), so that a boot or rebuild can check its
// image exists and is active, as Nova does. It reads with the Keystone
// token of the caller it serves, or, for a caller without one, with the
// token of corral's own service user (a TokenSource). It never imports
// corral's internals.
package glance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// errTokenRefused marks a 401: the token itself is not valid (a 403 is a
// valid token without the right).
var errTokenRefused = errors.New("the token is not valid")

// Image is what corral reads of a Glance image.
type Image struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"` // "active" once its data is uploaded
	// MinRAM (MiB) and MinDisk (GiB) are the least a flavor must have to
	// boot the image; Size is its data's, in bytes (0: not uploaded).
	MinRAM  int64 `json:"min_ram"`
	MinDisk int64 `json:"min_disk"`
	Size    int64 `json:"size"`
}

// TokenSource gives the client the token of corral's own service user
// (*keystone.ServiceToken implements it).
type TokenSource interface {
	// Token returns a token that is not about to expire.
	Token(ctx context.Context) (string, error)
	// Refused tells the source that Glance refused token (401): the next
	// Token is a new one.
	Refused(token string)
}

// Client reads images from one Glance endpoint.
type Client struct {
	base    string
	hc      *http.Client
	service TokenSource
}

// Option changes how a Client is built.
type Option func(*Client)

// WithServiceToken has the client read as corral's service user when the
// caller has no token of its own (a caller with one of corral's static
// tokens). Without it, such a lookup sends no token.
func WithServiceToken(ts TokenSource) Option { return func(c *Client) { c.service = ts } }

// New returns a client of the Glance API at rawURL (e.g.
// http://127.0.0.1:9292). hc nil means a client with a 10 s timeout.
func New(rawURL string, hc *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("[glance] url %q is not an http(s) URL: give the image service's endpoint, e.g. http://127.0.0.1:9292", rawURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	c := &Client{base: u.String(), hc: hc}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// URL is the endpoint the client reads from.
func (c *Client) URL() string { return c.base }

// Image reads image id. token is the caller's Keystone token, sent as
// X-Auth-Token; empty means the caller has none: the client then reads
// with its service user's token (WithServiceToken), getting a new one
// once if Glance refuses it, or with no token at all.
func (c *Client) Image(ctx context.Context, token, id string) (Image, error) {
	if token != "" || c.service == nil {
		return c.image(ctx, token, id)
	}
	for attempt := 0; ; attempt++ {
		svc, err := c.service.Token(ctx)
		if err != nil {
			return Image{}, fmt.Errorf("%w: corral's [glance] service user could not log in: %w", ErrUnavailable, err)
		}
		im, err := c.image(ctx, svc, id)
		if !errors.Is(err, errTokenRefused) || attempt > 0 {
			return im, err
		}
		c.service.Refused(svc)
	}
}

func (c *Client) image(ctx context.Context, token, id string) (Image, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v2/images/"+url.PathEscape(id), nil)
	if err != nil {
		return Image{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return Image{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Image{}, fmt.Errorf("%w: read GET %s: %w", ErrUnavailable, req.URL, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound:
		return Image{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	case resp.StatusCode == http.StatusUnauthorized:
		return Image{}, fmt.Errorf("%w: GET %s answered %s (%w)", ErrUnauthorized, req.URL, resp.Status, errTokenRefused)
	case resp.StatusCode == http.StatusForbidden:
		return Image{}, fmt.Errorf("%w: GET %s answered %s", ErrUnauthorized, req.URL, resp.Status)
	default:
		return Image{}, fmt.Errorf("%w: GET %s answered %s", ErrUnavailable, req.URL, resp.Status)
	}
	var im Image
	if err := json.Unmarshal(body, &im); err != nil || im.ID == "" {
		return Image{}, fmt.Errorf("%w: GET %s answered no image document", ErrUnavailable, req.URL)
	}
	return im, nil
}
