// Package client is the Go client of corral's HTTP API, used by the CLI,
// the upgrade tool and tests that drive real agents: a JSON transport
// (Do, Raw) and typed calls on top of it (servers.go, flavors.go,
// admin.go) that send and decode the wire package's types. It imports
// nothing but the standard library and wire, so any program can use it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/corral-dev/corral/wire"
)

// Client talks to one corral peer.
type Client struct {
	Addr  string // base URL, e.g. http://127.0.0.2:7480
	Token string
	HTTP  *http.Client
	// Headers are added to every request (e.g. a compute microversion).
	Headers map[string]string
	// Consistency, when set, is the ?consistency= of the typed reads:
	// stale, default or linearizable.
	Consistency string
	// ComputeVersion is the compute microversion of the typed compute
	// calls (default wire.ComputeVersion), unless Headers names one.
	ComputeVersion string
}

// New returns a client for addr ("host:port" or a URL).
func New(addr, token string) *Client {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &Client{Addr: strings.TrimRight(addr, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Error is an error answered by the API.
type Error struct {
	Status    int
	Kind      string
	Message   string
	RequestID string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// IsStatus reports whether err is an API error with the given status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// Do sends a JSON request and decodes a JSON answer into out (if not nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, in, out, nil)
}

// do is Do with headers of its own, which Headers does not override.
func (c *Client) do(ctx context.Context, method, path string, in, out any, hdr map[string]string) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Addr+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("X-Auth-Token", c.Token)
	}
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range hdr {
		if _, set := c.Headers[k]; !set {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach corral at %s: %w (set CORRAL_ADDR or --addr)", c.Addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return decodeError(resp, raw)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if s, ok := out.(*string); ok {
		*s = string(raw)
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// decodeError reads both the native error shape and Nova's.
func decodeError(resp *http.Response, raw []byte) error {
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-OpenStack-Request-Id")}
	var native struct {
		Error *wire.ErrorDetail `json:"error"`
	}
	if json.Unmarshal(raw, &native) == nil && native.Error != nil {
		e.Kind, e.Message = native.Error.Kind, native.Error.Message
		return e
	}
	var nova map[string]wire.NovaError
	if json.Unmarshal(raw, &nova) == nil {
		for k, v := range nova {
			e.Kind, e.Message = k, v.Message
			return e
		}
	}
	e.Message = strings.TrimSpace(string(raw))
	return e
}

// Raw sends body (may be nil) as application/octet-stream and returns the
// answer's body and headers; an error status becomes an *Error.
func (c *Client) Raw(ctx context.Context, method, path string, body io.Reader) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Addr+path, body)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if c.Token != "" {
		req.Header.Set("X-Auth-Token", c.Token)
	}
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach corral at %s: %w (set CORRAL_ADDR or --addr)", c.Addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 2<<30))
	if err != nil {
		return nil, nil, fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, resp.Header, decodeError(resp, raw)
	}
	return raw, resp.Header, nil
}
