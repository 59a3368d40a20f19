package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// novaServer is the subset of Nova's server view the suite reads.
type novaServer struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Status string  `json:"status"`
	Task   *string `json:"OS-EXT-STS:task_state"`
	Host   *string `json:"OS-EXT-SRV-ATTR:host"`
	Node   *string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	Fault  *struct {
		Message string `json:"message"`
	} `json:"fault"`
}

func (s novaServer) State() ServerState {
	st := ServerState{ID: s.ID, Name: s.Name, Status: s.Status}
	if s.Task != nil {
		st.Task = *s.Task
	}
	if s.Host != nil {
		st.Host = *s.Host
	}
	if s.Node != nil {
		st.Node = *s.Node
	}
	if s.Fault != nil {
		st.Fault = s.Fault.Message
	}
	return st
}

// ListServers lists servers at the given consistency (all of them, with
// deleted ones when deleted is true).
func (c *Corral) ListServers(ctx context.Context, base, consistency string, deleted bool) ([]ServerState, error) {
	q := url.Values{}
	if consistency != "" {
		q.Set("consistency", consistency)
	}
	if deleted {
		q.Set("deleted", "true")
	}
	var body struct {
		Servers []novaServer `json:"servers"`
	}
	if err := c.GetJSON(ctx, base, "/compute/v2.1/servers/detail?"+q.Encode(), &body); err != nil {
		return nil, err
	}
	out := make([]ServerState, 0, len(body.Servers))
	for _, s := range body.Servers {
		out = append(out, s.State())
	}
	return out, nil
}

// RaftStatus is the subset of GET /v1/cluster/raft the suite reads.
type RaftStatus struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	Leader    string   `json:"leader"`
	Term      uint64   `json:"term"`
	Voters    []string `json:"voters"`
	NonVoters []string `json:"nonvoters"`
}

// HostView is one host of GET /v1/hosts.
type HostView struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Servers int    `json:"servers"`
}

// OwnerView is GET /v1/servers/{id}/owner.
type OwnerView struct {
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	HostUp   bool   `json:"host_up"`
	Status   string `json:"status"`
	Task     string `json:"task_state,omitempty"`
	Node     string `json:"node_uuid,omitempty"`
}

// Reservation is one row of GET /v1/reservations.
type Reservation struct {
	NodeUUID       string `json:"node_uuid"`
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

// MirrorNode is one row of GET /v1/nodes.
type MirrorNode struct {
	UUID          string `json:"uuid"`
	ResourceClass string `json:"resource_class"`
	ReservedBy    string `json:"reserved_by,omitempty"`
}

// CreateFlavor creates the suite's bare-metal flavor: one unit of the
// nodes' custom resource class, and the standard classes zeroed (the
// vcpus/ram/disk figures are only informational), as Nova documents it.
func (c *Corral) CreateFlavor(ctx context.Context, base, id, customRC string) error {
	o := c.Do(ctx, http.MethodPost, base, "/compute/v2.1/flavors", map[string]any{"flavor": map[string]any{
		"name": id, "id": id, "vcpus": 1, "ram": 1, "disk": 1}})
	if o.Code != http.StatusOK && o.Code != http.StatusCreated && o.Code != http.StatusConflict {
		return fmt.Errorf("create flavor: %s", o)
	}
	o = c.Do(ctx, http.MethodPost, base, "/compute/v2.1/flavors/"+id+"/os-extra_specs",
		map[string]any{"extra_specs": map[string]string{"resources:" + customRC: "1",
			"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}})
	if o.Code != http.StatusOK {
		return fmt.Errorf("set flavor extra specs: %s", o)
	}
	return nil
}
