// Package glance is corral's client of OpenStack's image service: it reads
// one image (GET /v2/images/{id}), so that a boot or rebuild can check its
// image exists and is active, as Nova does, and lists, reads, changes and
// deletes images for Nova's image proxy (images.go). It reads with the Keystone
// token of the caller it serves, or, for a caller without one, with the
// token of corral's own service user (a TokenSource). It never imports
// corral's internals.
package glance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
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

	mu    sync.Mutex
	attrs map[string]bool // BaseAttributes, once read
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
	body, err := c.call(ctx, token, http.MethodGet, "/v2/images/"+url.PathEscape(id), "", nil)
	if errors.Is(err, ErrNotFound) {
		return Image{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Image{}, err
	}
	var im Image
	if err := json.Unmarshal(body, &im); err != nil || im.ID == "" {
		return Image{}, fmt.Errorf("%w: GET %s/v2/images/%s answered no image document", ErrUnavailable, c.base, url.PathEscape(id))
	}
	return im, nil
}

// call sends a request to Glance with token (or, for a caller without
// one, as the service user: see Image) and returns the body of a 2xx
// answer. Other answers are errors wrapping ErrNotFound (404),
// ErrUnauthorized (401, 403), ErrInvalid (400), ErrConflict (409) or
// ErrUnavailable, with Glance's explanation.
func (c *Client) call(ctx context.Context, token, method, path, contentType string, body []byte) ([]byte, error) {
	if token != "" || c.service == nil {
		return c.send(ctx, token, method, path, contentType, body)
	}
	for attempt := 0; ; attempt++ {
		svc, err := c.service.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: corral's [glance] service user could not log in: %w", ErrUnavailable, err)
		}
		out, err := c.send(ctx, svc, method, path, contentType, body)
		if !errors.Is(err, errTokenRefused) || attempt > 0 {
			return out, err
		}
		c.service.Refused(svc)
	}
}

// maxAnswer bounds an answer's body: a page of Glance's largest (1000
// images) fits.
const maxAnswer = 16 << 20

func (c *Client) send(ctx context.Context, token, method, path, contentType string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s %s: %w", ErrUnavailable, method, req.URL, err)
	}
	what := fmt.Sprintf("%s %s answered %s", method, req.URL, resp.Status)
	if why := explanation(out); why != "" && resp.StatusCode >= 300 {
		what += ": " + why
	}
	switch st := resp.StatusCode; {
	case st >= 200 && st < 300:
		return out, nil
	case st == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, what)
	case st == http.StatusUnauthorized:
		return nil, fmt.Errorf("%w: %s (%w)", ErrUnauthorized, what, errTokenRefused)
	case st == http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s", ErrUnauthorized, what)
	case st == http.StatusBadRequest:
		return nil, fmt.Errorf("%w: %s", ErrInvalid, what)
	case st == http.StatusConflict:
		return nil, fmt.Errorf("%w: %s", ErrConflict, what)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, what)
}

// explanation is the text of a Glance error page ("400 Bad Request\n\n
// Attribute 'x' is read-only.\n"), without its status line, on one line,
// at most 300 bytes.
func explanation(body []byte) string {
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) > 0 && len(lines[0]) > 4 && lines[0][3] == ' ' && strings.IndexFunc(lines[0][:3], func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		lines = lines[1:]
	}
	out := strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
	if len(out) > 300 {
		out = strings.ToValidUTF8(out[:300], "") + "…"
	}
	return out
}
