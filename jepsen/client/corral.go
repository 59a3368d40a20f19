package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Corral speaks corral's HTTP API (black box: only JSON over HTTP).
type Corral struct {
	Token string
	HTTP  *http.Client
}

// NewCorral returns a client; every request is bounded by its context.
func NewCorral(token string, tlsConf *tls.Config) *Corral {
	tr := &http.Transport{
		TLSClientConfig:     tlsConf,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Corral{Token: token, HTTP: &http.Client{Transport: tr}}
}

// Outcome is a request's answer: the HTTP status (0 when none came) and,
// when no status came, the transport error and whether the request
// certainly never reached the server.
type Outcome struct {
	Code      int
	Err       error
	NotSent   bool // the connection could not even be opened
	Body      []byte
	RequestID string // the X-OpenStack-Request-Id of the answer
}

// Definite reports whether a write with this outcome certainly did not
// take effect (when it did not succeed). corral answers 400/403/404/409
// before writing, and 503 only when the proposal certainly was not applied
// (no leader, not leader, raft queue full, shutdown); 500 and 504 mean the
// outcome is unknown, as does a request that timed out or lost its
// connection after being sent.
func (o Outcome) Definite() bool {
	switch {
	case o.Code == 0:
		return o.NotSent
	case o.Code >= 200 && o.Code < 300:
		return true
	case o.Code >= 400 && o.Code < 500:
		return true
	case o.Code == http.StatusServiceUnavailable:
		return true
	}
	return false
}

func (o Outcome) String() string {
	if o.Code == 0 {
		return o.Err.Error()
	}
	msg := bytes.TrimSpace(o.Body)
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return fmt.Sprintf("HTTP %d: %s", o.Code, msg)
}

// Do sends one request to base+path with a JSON body (nil for none).
func (c *Corral) Do(ctx context.Context, method, base, path string, body any) Outcome {
	return c.DoWith(ctx, method, base, path, body, nil)
}

// DoWith is Do with extra request headers.
func (c *Corral) DoWith(ctx context.Context, method, base, path string, body any, hdr http.Header) Outcome {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Outcome{Err: err, NotSent: true}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return Outcome{Err: err, NotSent: true}
	}
	req.Header.Set("X-Auth-Token", c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var op *net.OpError
		notSent := errors.As(err, &op) && op.Op == "dial"
		return Outcome{Err: err, NotSent: notSent}
	}
	defer resp.Body.Close()
	rid := resp.Header.Get("X-OpenStack-Request-Id")
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		// The status came, so the server decided; the body is lost.
		return Outcome{Code: resp.StatusCode, Err: err, RequestID: rid}
	}
	return Outcome{Code: resp.StatusCode, Body: b, RequestID: rid}
}

// GetJSON reads base+path into out; any status other than 200 is an error.
func (c *Corral) GetJSON(ctx context.Context, base, path string, out any) error {
	o := c.Do(ctx, http.MethodGet, base, path, nil)
	if o.Code != http.StatusOK {
		return fmt.Errorf("GET %s%s: %s", base, path, o)
	}
	if err := json.Unmarshal(o.Body, out); err != nil {
		return fmt.Errorf("GET %s%s: %w", base, path, err)
	}
	return nil
}

// ListServers lists servers at the given consistency (all of them, with
// deleted ones when deleted is true).
func (c *Corral) ListServers(ctx context.Context, base, consistency string, deleted bool) ([]Server, error) {
	q := url.Values{}
	if consistency != "" {
		q.Set("consistency", consistency)
	}
	if deleted {
		q.Set("deleted", "true")
	}
	var body ServersResponse
	if err := c.GetJSON(ctx, base, ServersDetailPath+"?"+q.Encode(), &body); err != nil {
		return nil, err
	}
	return body.Servers, nil
}

// CreateFlavor creates the suite's bare-metal flavor: one unit of the
// nodes' custom resource class, and the standard classes zeroed (the
// vcpus/ram/disk figures are only informational), as Nova documents it.
func (c *Corral) CreateFlavor(ctx context.Context, base, id, customRC string) error {
	o := c.Do(ctx, http.MethodPost, base, FlavorsPath, NewFlavor(id))
	if o.Code != http.StatusOK && o.Code != http.StatusCreated && o.Code != http.StatusConflict {
		return fmt.Errorf("create flavor: %s", o)
	}
	o = c.Do(ctx, http.MethodPost, base, ExtraSpecsPath(id),
		ExtraSpecsBody{ExtraSpecs: map[string]string{"resources:" + customRC: "1",
			"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}})
	if o.Code != http.StatusOK {
		return fmt.Errorf("set flavor extra specs: %s", o)
	}
	return nil
}

// ResourceClass is Placement's spelling of an Ironic resource class.
func ResourceClass(raw string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(raw) {
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if !strings.HasPrefix(s, "CUSTOM_") {
		s = "CUSTOM_" + s
	}
	return s
}

// NewUUID is a random (version 4) UUID, as request ids and server ids are.
func NewUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
