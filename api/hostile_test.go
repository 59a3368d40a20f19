package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/wire"
)

// TestHostileInput sends every route of the route table requests a
// hostile client would: its parameters, query, headers and body valid,
// wrong or hostile (NUL, CR/LF, bidi controls, lone surrogates, bytes
// that are no UTF-8, 200 KB strings, 20,000 metadata items, 10,000
// networks, wrong types, bodies that are no JSON, the wrong Content-Type,
// the wrong method), round-robin over the peers of a 3-peer cluster, as
// every kind of caller. It fails on a 5xx (but the 501 of what corral
// does not do), on an error that is not the API's error body, on a
// refused request that changed the state, on a stored value Nova would
// refuse, and on replicas that disagree at the end.
//
// The requests come from one seeded source (CORRAL_HOSTILE_SEED, default
// 20): the same run every time. CORRAL_HOSTILE_REQUESTS sets their
// number (default 1500, 300 with -short); the run stops early, passing,
// once hostileBudget is spent on a slow machine.
func TestHostileInput(t *testing.T) {
	seed := envUint(t, "CORRAL_HOSTILE_SEED", 20)
	n := int(envUint(t, "CORRAL_HOSTILE_REQUESTS", 1500))
	if testing.Short() && os.Getenv("CORRAL_HOSTILE_REQUESTS") == "" {
		n = 300
	}
	h := startHostile(t)
	rng := rand.New(rand.NewPCG(seed, 0x636f7272616c))
	routes := h.c.api[0].RouteTable()
	// Admins reach most routes; every other caller, and none, too.
	tokens := []string{adminToken, adminToken, adminToken, adminToken, fuzzAdmin, fuzzAdmin, memberA, memberA, memberA, memberB,
		readerToken, fuzzReader, "", "no-such-token"}
	stats := map[int]int{}
	start := time.Now()
	before := h.userDigest()
	sent := 0
	for i := range n {
		if time.Since(start) > hostileBudget {
			t.Logf("stopped after %d of %d requests: the budget of %s is spent", i, n, hostileBudget)
			break
		}
		// Every route in turn, and every other request one of the writes
		// that store what users send.
		rt := routes[(i/2)%len(routes)]
		if i%2 == 1 {
			w := strings.SplitN(writes[rng.IntN(len(writes))], " ", 2)
			rt = api.Route{Method: w[0], Path: wire.ComputePrefix + w[1], Role: core.RoleProjectMember}
		}
		req := h.request(rng, rt, tokens[rng.IntN(len(tokens))], i)
		ts := h.c.ts[i%len(h.c.ts)]
		res := h.send(ts, req)
		sent++
		stats[res.code]++
		h.check(rt, req, res)
		after := h.userDigest()
		if res.code >= 400 && after != before {
			t.Errorf("%s answered %d and changed the state", req, res.code)
		}
		before = after
		if i%250 == 249 {
			h.checkStored()
		}
		if t.Failed() && h.failures() > 20 {
			t.Fatal("more than 20 failures: stopping")
		}
	}
	h.checkStored()
	h.checkReplicas()
	codes := slices.Sorted(func(yield func(int) bool) {
		for c := range stats {
			if !yield(c) {
				return
			}
		}
	})
	var summary []string
	for _, c := range codes {
		summary = append(summary, fmt.Sprintf("%d×%d", c, stats[c]))
	}
	t.Logf("%d requests (seed %d) in %s over %d routes: %s", sent, seed, time.Since(start).Round(time.Millisecond), len(routes), strings.Join(summary, " "))
}

// hostileBudget bounds the time TestHostileInput sends requests for: with
// the cluster's start and the checks at the end, about a minute under the
// race detector on two cores.
const hostileBudget = 40 * time.Second

const (
	fuzzReader = "gAAAAA-hostile-reader"
	fuzzAdmin  = "gAAAAA-hostile-admin"
)

// hostile is the fuzzer's cluster and what it made.
type hostile struct {
	t      *testing.T
	c      *apiCluster
	fx     fixture
	client *http.Client
	fails  int
}

func startHostile(t *testing.T) *hostile {
	ks := newFakeKeystone(t)
	ks.issue(memberA, "ann", "demo-a", "member", "reader")
	ks.issue(memberB, "ben", "demo-b", "member", "reader")
	ks.issue(fuzzReader, "rita", "demo-a", "reader")
	ks.issue(fuzzAdmin, "root", "admin", "admin")
	c := startAPICluster(t, 3, func(p *clustertest.Peer, cfg *api.Config) {
		v, err := keystone.New(keystone.Options{AuthURL: ks.srv.URL + "/v3", WWWAuthenticateURI: "http://keystone.test:5000",
			Username: "corral", Password: "pw", ProjectName: "service", TokenCacheTime: time.Minute,
			HTTPRequestTimeout: 5 * time.Second}, prometheus.NewRegistry(), keystone.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Keystone = v
	})
	h := &hostile{t: t, c: c, client: &http.Client{Timeout: 30 * time.Second}}
	ts := c.ts[0]
	for _, s := range []struct{ method, path, token, body string }{
		{"POST", computeBase + "/flavors", adminToken, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`},
		{"POST", computeBase + "/flavors", adminToken, `{"flavor": {"name": "priv", "id": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": false}}`},
		{"POST", computeBase + "/flavors/f/os-extra_specs", adminToken, `{"extra_specs": {"k1": "v1"}}`},
		{"POST", computeBase + "/os-keypairs", adminToken, `{"keypair": {"name": "k", "public_key": "` + testPubKey + `"}}`},
		{"POST", computeBase + "/os-keypairs", memberA, `{"keypair": {"name": "k", "public_key": "` + testPubKey + `"}}`},
	} {
		if r := do(t, ts, s.method, s.path, s.token, s.body, nil); r.code >= 300 {
			t.Fatalf("setup %s %s: %s", s.method, s.path, r)
		}
	}
	r := do(t, ts, "POST", computeBase+"/servers", adminToken, `{"server": {"name": "s", "imageRef": "http://img/a", "flavorRef": "f", "networks": "none", "key_name": "k"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("setup boot: %s", r)
	}
	h.fx = fixture{server: get(t, r.json(t), "server", "id").(string), flavor: "f", keyPair: "k", spec: "k1"}
	return h
}

// hostileRequest is one request of the fuzzer.
type hostileRequest struct {
	method, path, token string
	header              map[string]string
	body                []byte
}

func (r hostileRequest) String() string {
	b := r.body
	if len(b) > 160 {
		b = append(b[:160:160], "..."...)
	}
	p := r.path
	if len(p) > 160 {
		p = p[:160] + "..."
	}
	return fmt.Sprintf("%s %s (token %q, %v) %q", r.method, p, r.token, r.header, b)
}

// request draws a request for the route.
func (h *hostile) request(rng *rand.Rand, rt api.Route, token string, seq int) hostileRequest {
	req := hostileRequest{method: rt.Method, token: token, header: map[string]string{}}
	if rng.IntN(100) < 15 {
		req.method = methods[rng.IntN(len(methods))]
	}
	path, vals := fillPath(rng, h.fx, rt, req.method)
	if q := queries[rng.IntN(len(queries))]; q != "" && rng.IntN(2) == 0 {
		path += "?" + q
	}
	req.path = path
	if strings.HasPrefix(rt.Path, wire.ComputePrefix) && rng.IntN(2) == 0 {
		v := []string{"2.1", "2.19", "2.37", "2.52", "2.55", "2.73", "2.79", "latest", "2.80", "x", "compute"}[rng.IntN(11)]
		req.header["OpenStack-API-Version"] = "compute " + v
	}
	switch req.method {
	case "POST", "PUT", "PATCH", "DELETE":
		if req.method != "DELETE" || rng.IntN(4) == 0 {
			req.body = body(rng, req.method+" "+rt.Path, vals, seq)
		}
	}
	ct := "application/json"
	switch n := rng.IntN(20); {
	case n == 0:
		ct = "application/xml"
	case n == 1:
		ct = "text/plain"
	case n == 2:
		ct = ""
	case n == 3:
		ct = "application/json; charset=utf-8"
	case n == 4:
		ct = "multipart/form-data; boundary=x"
	}
	if ct != "" && (req.body != nil || rng.IntN(10) == 0) {
		req.header["Content-Type"] = ct
	}
	return req
}

// answer is a fully read response.
type answer struct {
	code int
	hdr  http.Header
	body []byte
}

// send sends the request, again while the answer is a 503 (an election
// under a loaded machine, not a fault of the input).
func (h *hostile) send(ts *httptest.Server, r hostileRequest) answer {
	h.t.Helper()
	var a answer
	testkit.Eventually(h.t, 10*time.Second, func() error {
		req, err := http.NewRequest(r.method, ts.URL+r.path, bytes.NewReader(r.body))
		if err != nil {
			h.t.Fatalf("%s: %v", r, err)
		}
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		if r.token != "" {
			req.Header.Set("X-Auth-Token", r.token)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			h.t.Fatalf("%s: %v", r, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			h.t.Fatalf("%s: read: %v", r, err)
		}
		a = answer{code: resp.StatusCode, hdr: resp.Header, body: b}
		if a.code == http.StatusServiceUnavailable {
			return fmt.Errorf("%s: still 503: %.300s", r, b)
		}
		return nil
	}, testkit.Every(200*time.Millisecond))
	return a
}

func (h *hostile) failures() int { return h.fails }

func (h *hostile) fail(format string, args ...any) {
	h.t.Helper()
	h.fails++
	h.t.Errorf(format, args...)
}

// novaKeys is Nova's key of each status.
var novaKeys = map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 405: "badMethod",
	409: "conflictingRequest", 413: "overLimit", 415: "badMediaType", 429: "overLimit", 501: "notImplemented", 503: "serviceUnavailable"}

// check holds an answer to the API's rules: no 5xx but the 501s of what
// corral does not do, and every error in its surface's error body.
func (h *hostile) check(rt api.Route, req hostileRequest, res answer) {
	h.t.Helper()
	path, _, _ := strings.Cut(req.path, "?")
	// os-interface and a server's os-security-groups are Neutron's: without
	// [neutron] (as here) they are Nova's 501.
	notImplemented := strings.HasSuffix(rt.Path, "/uptime") || strings.HasSuffix(rt.Path, "/diagnostics") || rt.Path == wire.LeavePath ||
		strings.Contains(rt.Path, "/os-interface") || strings.HasSuffix(rt.Path, "/os-security-groups")
	if res.code >= 500 && !(res.code == http.StatusNotImplemented && notImplemented) {
		h.fail("%s: %d %.300s", req, res.code, res.body)
		return
	}
	if res.code < 400 {
		return
	}
	if ct := res.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		h.fail("%s: %d with Content-Type %q: %.300s", req, res.code, ct, res.body)
		return
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(res.body, &doc); err != nil {
		h.fail("%s: %d is no JSON object: %.300s", req, res.code, res.body)
		return
	}
	switch {
	case path == wire.ComputePrefix || strings.HasPrefix(path, wire.ComputePrefix+"/"):
		want := novaKeys[res.code]
		if want == "" {
			want = "computeFault"
		}
		var e wire.NovaError
		if len(doc) != 1 || doc[want] == nil || json.Unmarshal(doc[want], &e) != nil || e.Code != res.code || strings.TrimSpace(e.Message) == "" {
			h.fail("%s: %d is not Nova's %s: %.300s", req, res.code, want, res.body)
		}
	case path == wire.PlacementPrefix || strings.HasPrefix(path, wire.PlacementPrefix+"/"):
		var e []struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if len(doc) != 1 || json.Unmarshal(doc["errors"], &e) != nil || len(e) != 1 || e[0].Status != res.code || e[0].Code == "" || e[0].Title == "" {
			h.fail("%s: %d is not Placement's error: %.300s", req, res.code, res.body)
		}
	case core.IsPeerPath(path):
		var e struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		}
		if json.Unmarshal(doc["error"], &e) != nil || e.Kind == "" || e.Message == "" {
			h.fail("%s: %d is not the forwarding protocol's error: %.300s", req, res.code, res.body)
		}
	default:
		var e wire.ErrorDetail
		if len(doc) != 1 || json.Unmarshal(doc["error"], &e) != nil || e.Code != res.code || e.Kind == "" || e.Message == "" || e.RequestID == "" {
			h.fail("%s: %d is not the native error: %.300s", req, res.code, res.body)
		}
	}
}

// leader is the store of the peer that leads now.
func (h *hostile) leader() *fsm.Store { return h.c.h.Leader(15 * time.Second).Node.Store() }

// fuzzUsers are the users whose key pairs the fuzzer's callers make.
var fuzzUsers = []string{fsm.DefaultProject, "ann-id", "ben-id", "rita-id", "root-id"}

// userDigest is the leader's state of what users write (flavors, servers,
// key pairs), without what the cluster changes by itself (hosts, owners).
func (h *hostile) userDigest() string {
	st := h.leader()
	type server struct {
		ID, Name, ImageRef, KeyName, Status, Task, LockedReason, Flavor string
		Metadata                                                        map[string]string
		Networks                                                        []fsm.Network
		Locked                                                          bool
	}
	var servers []server
	for _, v := range st.Servers() {
		servers = append(servers, server{v.ID, v.Name, v.ImageRef, v.KeyName, string(v.Status), v.TaskState, v.LockedReason,
			v.Flavor.ID, v.Metadata, v.Networks, v.Locked})
	}
	var keys []fsm.KeyPair
	for _, u := range fuzzUsers {
		keys = append(keys, st.KeyPairs(u)...)
	}
	b, err := json.Marshal([]any{st.Flavors(), servers, keys})
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// checkReplicas waits until every peer holds the leader's state.
func (h *hostile) checkReplicas() {
	testkit.Eventually(h.t, 20*time.Second, func() error {
		want := h.leader().Digest()
		for _, p := range h.c.h.Running() {
			if got := p.Node.Store().Digest(); got != want {
				return fmt.Errorf("%s's replica differs from the leader's", p.Name)
			}
		}
		return nil
	})
}

func envUint(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
