package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

const (
	adminToken  = "admin-token-1"
	readerToken = "reader-token-1"
	computeBase = "/compute/v2.1"
)

var requestIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// env is a real API served for one peer of an in-process cluster.
type env struct {
	t    *testing.T
	h    *clustertest.Harness
	peer *clustertest.Peer
	ts   *httptest.Server
}

// serve builds the API of one peer and serves it over HTTP until the test ends.
func serve(t *testing.T, p *clustertest.Peer) *httptest.Server {
	t.Helper()
	srv, err := api.New(api.Config{
		Tokens:   map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
		Peers:    p.Node,
		Registry: p.Registry,
		Gatherer: p.Registry,
		Logger:   slog.New(slog.DiscardHandler),
	}, p.Node)
	if err != nil {
		t.Fatalf("api.New for %s: %v", p.Name, err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// startCluster starts an n-peer in-process cluster.
func startCluster(t *testing.T, n int) *clustertest.Harness {
	t.Helper()
	return clustertest.Start(t, n, clustertest.Options{})
}

// newEnv starts a one-peer cluster, serves its API and waits until the
// peer is ready and has registered its own host, so that nothing but the
// test changes the replicated state afterwards.
func newEnv(t *testing.T) *env {
	t.Helper()
	h := startCluster(t, 1)
	p := h.Leader(10 * time.Second)
	e := &env{t: t, h: h, peer: p, ts: serve(t, p)}
	e.waitReady()
	waitSettled(t, p)
	return e
}

// waitSettled waits until every peer's replica holds every peer's host up
// and every feature enabled: the leader commits those by itself once
// gossip has spread, after the peers are ready. From then on only the test
// (or a failure detector) changes the state, so that a test may compare
// digests to show that a refused request changed nothing.
func waitSettled(t *testing.T, peers ...*clustertest.Peer) {
	t.Helper()
	testkit.Eventually(t, 15*time.Second, func() error {
		for _, p := range peers {
			for _, q := range peers {
				hst, err := p.Node.Store().Host(q.Name)
				if err != nil {
					return fmt.Errorf("%s: %w", p.Name, err)
				}
				if hst.Status != fsm.HostUp {
					return fmt.Errorf("%s sees host %s %s", p.Name, hst.Name, hst.Status)
				}
			}
			for name := range fsm.FeatureCommands {
				if !p.Node.Store().FeatureEnabled(name) {
					return fmt.Errorf("%s: feature %s is off", p.Name, name)
				}
			}
		}
		return nil
	})
}

func (e *env) waitReady() {
	e.t.Helper()
	testkit.Eventually(e.t, 10*time.Second, func() error {
		r := do(e.t, e.ts, "GET", "/readyz", "", "", nil)
		if r.code != http.StatusOK {
			return fmt.Errorf("readyz %d: %s", r.code, r.body)
		}
		return nil
	})
}

func (e *env) digest() string { return e.peer.Node.Store().Digest() }

// compute returns a gophercloud compute client for the env's API.
func (e *env) compute(token string) *gophercloud.ServiceClient {
	return computeClient(e.ts, token)
}

func computeClient(ts *httptest.Server, token string) *gophercloud.ServiceClient {
	ep := ts.URL + computeBase + "/"
	return &gophercloud.ServiceClient{
		ProviderClient: &gophercloud.ProviderClient{TokenID: token},
		Endpoint:       ep,
		ResourceBase:   ep,
		Type:           "compute",
	}
}

// response is a fully read HTTP response.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.code, r.body) }

// json decodes the body into a generic value, failing the test when the
// body is not JSON.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("response %d is not a JSON object: %v: %q", r.code, err, r.body)
	}
	return v
}

// do sends one request. token is sent as X-Auth-Token unless empty.
func do(t *testing.T, ts *httptest.Server, method, path, token, body string, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

// errorMessage extracts the message of a JSON error in either shape: the
// native {"error": {...}} or Nova's {"<key>": {"code", "message"}}, and
// checks the code inside matches the status.
func errorMessage(t *testing.T, r response) (key, msg string) {
	t.Helper()
	v := r.json(t)
	if len(v) != 1 {
		t.Fatalf("error body has %d top-level keys, want 1: %s", len(v), r.body)
	}
	for k, inner := range v {
		m, ok := inner.(map[string]any)
		if !ok {
			t.Fatalf("error body %q is not an object: %s", k, r.body)
		}
		if code, _ := m["code"].(float64); int(code) != r.code {
			t.Fatalf("error code in body = %v, status = %d: %s", m["code"], r.code, r.body)
		}
		msg, _ = m["message"].(string)
		if strings.TrimSpace(msg) == "" {
			t.Fatalf("error without a message: %s", r.body)
		}
		return k, msg
	}
	panic("unreachable")
}

// get walks a decoded JSON value by keys (string) and indices (int).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path[:i+1], cur)
			}
			next, ok := m[k]
			if !ok {
				t.Fatalf("at %v: key %q missing from %v", path[:i+1], k, m)
			}
			cur = next
		case int:
			a, ok := cur.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v is not an array with index %d", path[:i+1], cur, k)
			}
			cur = a[k]
		}
	}
	return cur
}
