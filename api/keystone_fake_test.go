package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
)

// fakeKeystone answers the two calls of keystonemiddleware's protocol:
// the service user's password authentication (POST /v3/auth/tokens) and
// the validation of a caller's token (GET /v3/auth/tokens with
// X-Subject-Token). Tokens are issued by the test with issue.
type fakeKeystone struct {
	srv *httptest.Server

	mu     sync.Mutex
	tokens map[string]fakeIdentity

	down      atomic.Bool  // drop every connection, as an unreachable Keystone
	validates atomic.Int64 // GET /v3/auth/tokens answered
}

type fakeIdentity struct {
	user, project string
	roles         []string
	revoked       bool
}

const fakeServiceToken = "service-token-of-corral"

func newFakeKeystone(t *testing.T) *fakeKeystone {
	t.Helper()
	k := &fakeKeystone{tokens: map[string]fakeIdentity{}}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

// issue makes token valid for the user in the project with the roles.
func (k *fakeKeystone) issue(token, user, project string, roles ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tokens[token] = fakeIdentity{user: user, project: project, roles: roles}
}

func (k *fakeKeystone) revoke(token string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := k.tokens[token]
	id.revoked = true
	k.tokens[token] = id
}

func (k *fakeKeystone) serve(w http.ResponseWriter, r *http.Request) {
	if k.down.Load() {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path != "/v3/auth/tokens" {
		http.NotFound(w, r)
		return
	}
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := func(user, project string, roles []string) map[string]any {
		var rs []map[string]string
		for _, r := range roles {
			rs = append(rs, map[string]string{"id": r + "-id", "name": r})
		}
		tok := map[string]any{"expires_at": exp, "issued_at": time.Now().UTC().Format(time.RFC3339),
			"user":  map[string]any{"id": user + "-id", "name": user, "domain": map[string]string{"id": "default", "name": "Default"}},
			"roles": rs, "audit_ids": []string{"audit"}}
		if project != "" {
			tok["project"] = map[string]any{"id": project, "name": project, "domain": map[string]string{"id": "default", "name": "Default"}}
		}
		return map[string]any{"token": tok}
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodPost:
		w.Header().Set("X-Subject-Token", fakeServiceToken)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body("corral", "service", []string{"service"}))
	case http.MethodGet:
		if r.Header.Get("X-Auth-Token") != fakeServiceToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`))
			return
		}
		k.validates.Add(1)
		k.mu.Lock()
		id, ok := k.tokens[r.Header.Get("X-Subject-Token")]
		k.mu.Unlock()
		if !ok || id.revoked {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error": {"code": 404, "message": "Could not find token.", "title": "Not Found"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(body(id.user, id.project, id.roles))
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// keystoneEnv is newEnv with Keystone authentication: static tokens as
// in newEnv, every other token validated by a fake Keystone.
type keystoneEnv struct {
	*env
	ks *fakeKeystone
}

// newKeystoneEnv starts a one-peer cluster whose API validates tokens
// against a fake Keystone with the given token_cache_time; each with
// changes the API's configuration.
func newKeystoneEnv(t *testing.T, cacheTime time.Duration, with ...func(*api.Config)) *keystoneEnv {
	t.Helper()
	ks := newFakeKeystone(t)
	h := startCluster(t, 1)
	p := h.Leader(10 * time.Second)
	v, err := keystone.New(keystone.Options{AuthURL: ks.srv.URL + "/v3", WWWAuthenticateURI: "http://keystone.test:5000",
		Username: "corral", Password: "pw", ProjectName: "service", TokenCacheTime: cacheTime,
		HTTPRequestTimeout: 2 * time.Second}, prometheus.NewRegistry(), keystone.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{
		Tokens:   map[string]core.Role{adminToken: core.RoleAdmin, readerToken: core.RoleReader},
		Keystone: v,
		Peers:    p.Node,
		Registry: p.Registry,
		Gatherer: p.Registry,
		Logger:   slog.New(slog.DiscardHandler),
	}
	for _, f := range with {
		f(&cfg)
	}
	srv, err := api.New(cfg, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e := &env{t: t, h: h, peer: p, ts: ts}
	e.waitReady()
	waitSettled(t, p)
	return &keystoneEnv{env: e, ks: ks}
}
