// Package glance is corral's client of OpenStack's image service: it reads
// one image (GET /v2/images/{id}) with the token of the request it serves,
// so that a boot or rebuild can check its image exists and is active, as
// Nova does. It never imports corral's internals.
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

// Errors of an image lookup; test with errors.Is.
var (
	ErrNotFound     = errors.New("image not found")
	ErrUnauthorized = errors.New("the image service refused the token")
	ErrUnavailable  = errors.New("the image service is unavailable")
)

// Image is what corral reads of a Glance image.
type Image struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"` // "active" once its data is uploaded
}

// Client reads images from one Glance endpoint.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client of the Glance API at rawURL (e.g.
// http://127.0.0.1:9292). hc nil means a client with a 10 s timeout.
func New(rawURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("[glance] url %q is not an http(s) URL: give the image service's endpoint, e.g. http://127.0.0.1:9292", rawURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: u.String(), hc: hc}, nil
}

// URL is the endpoint the client reads from.
func (c *Client) URL() string { return c.base }

// Image reads image id with token (sent as X-Auth-Token).
func (c *Client) Image(ctx context.Context, token, id string) (Image, error) {
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
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
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
