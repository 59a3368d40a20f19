package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// credsKeystone is a Keystone enough for an agent: password logins of
// service users (gophercloud's for [ironic], keystonemiddleware's for
// [keystone_authtoken]), each given the token "svc-<user>", and the
// validation of the users' tokens the test issues.
type credsKeystone struct {
	srv   *httptest.Server
	users map[string][]string // user token → roles (project demo-a)
}

func newCredsKeystone(t *testing.T) *credsKeystone {
	k := &credsKeystone{users: map[string][]string{
		"ks-admin-token": {"admin", "member", "reader"},
		"ks-alice-token": {"member", "reader"},
	}}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *credsKeystone) url() string { return k.srv.URL + "/v3" }

func (k *credsKeystone) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v3/auth/tokens" {
		http.NotFound(w, r)
		return
	}
	doc := func(user string, roles []string) map[string]any {
		var rs []map[string]string
		for _, r := range roles {
			rs = append(rs, map[string]string{"id": r, "name": r})
		}
		now := time.Now().UTC()
		return map[string]any{"token": map[string]any{
			"issued_at": now.Format(time.RFC3339), "expires_at": now.Add(time.Hour).Format(time.RFC3339),
			"methods": []string{"password"}, "audit_ids": []string{"a"}, "catalog": []any{}, "roles": rs,
			"user":    map[string]any{"id": user, "name": user, "domain": map[string]string{"id": "default", "name": "Default"}},
			"project": map[string]any{"id": "demo-a", "name": "demo-a", "domain": map[string]string{"id": "default", "name": "Default"}},
		}}
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.Method {
	case http.MethodPost:
		var in struct {
			Auth struct {
				Identity struct {
					Password struct {
						User struct{ Name, Password string }
					}
				}
			}
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &in)
		u := in.Auth.Identity.Password.User
		if u.Password != "pw-"+u.Name {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": {"code": 401, "message": "The request you have made requires authentication."}}`))
			return
		}
		w.Header().Set("X-Subject-Token", "svc-"+u.Name)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(doc(u.Name, []string{"admin", "service"}))
	case http.MethodGet:
		if !strings.HasPrefix(r.Header.Get("X-Auth-Token"), "svc-") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		roles, ok := k.users[r.Header.Get("X-Subject-Token")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error": {"code": 404, "message": "Could not find token."}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(doc(r.Header.Get("X-Subject-Token"), roles))
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// seenTokens records the X-Auth-Token of every request a fake service gets.
type seenTokens struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenTokens) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("X-Auth-Token"))
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// all returns every token recorded; since returns those recorded after mark.
func (s *seenTokens) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func (s *seenTokens) mark() int { return len(s.all()) }

func (s *seenTokens) since(mark int) []string { return s.all()[mark:] }

const credsImage = "7b5f2a1e-0000-4000-8000-00000000c0de"

// credsAgent is an in-process agent with static tokens and Keystone,
// reaching a fake Ironic as a Keystone service user and checking images
// in a fake Glance; both fakes record every token they receive.
type credsAgent struct {
	t              *testing.T
	cfg            agentConfig
	ironic, glance seenTokens
	startErr       error // startAgent's
}

const (
	credsAdmin  = "static-admin-token-0123"
	credsReader = "static-reader-token-0123"
	credsPeer   = "static-peer-token-0123"
)

// startCredsAgent starts the agent and waits until its proxy answers; a
// start that fails is in startErr.
func startCredsAgent(t *testing.T, configure func(*agentConfig)) *credsAgent {
	t.Helper()
	ks := newCredsKeystone(t)
	a := &credsAgent{t: t}
	s := sim.New(sim.Options{})
	ir := httptest.NewServer(a.ironic.record(s))
	gl := httptest.NewServer(a.glance.record(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.TrimPrefix(r.URL.Path, "/v2/images/") != credsImage {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"id": %q, "name": "img", "status": "active"}`, credsImage)
	})))
	t.Cleanup(func() { ir.Close(); gl.Close(); s.Close() })

	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "creds1", t.TempDir(), "127.0.0.1", 1
	cfg.AdminTokens, cfg.ReaderTokens, cfg.PeerToken = []string{credsAdmin}, []string{credsReader}, credsPeer
	cfg.AuthStrategy = strategyKeystone
	for k, v := range map[string]string{"auth_url": ks.url(), "username": "corral-ks", "password": "pw-corral-ks",
		"project_name": "service"} {
		if err := cfg.Keystone.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Ironic.URL, cfg.Ironic.SyncInterval = ir.URL, time.Second
	cfg.Ironic.Auth = ironic.Auth{Type: ironic.AuthPassword, AuthURL: ks.url(), Username: "corral-ironic",
		Password: "pw-corral-ironic", ProjectName: "service"}
	cfg.Glance = glanceConfig{URL: gl.URL, AuthType: "password", Service: keystone.Options{AuthURL: ks.url(),
		Username: "corral-glance", Password: "pw-corral-glance", ProjectName: "service"}}
	if configure != nil {
		configure(&cfg)
	}
	_, err := startTestAgent(t, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	a.cfg = cfg
	if err != nil {
		a.startErr = err
		return a
	}
	// Ready once the proxy answers: a leader, and Ironic reached.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := a.call(http.MethodGet, "/compute/v2.1/os-baremetal-nodes", credsAdmin, "")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's proxy did not answer within 30 s: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond) // pacing the poll
	}
	return a
}

func (a *credsAgent) call(method, path, token, body string) (int, string) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+a.cfg.apiAddr()+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// noStaticTokens fails the test if Ironic or Glance ever saw one of corral's static tokens.
func (a *credsAgent) noStaticTokens() {
	a.t.Helper()
	for name, seen := range map[string][]string{"Ironic": a.ironic.all(), "Glance": a.glance.all()} {
		for _, tok := range seen {
			if tok == credsAdmin || tok == credsReader || tok == credsPeer {
				a.t.Errorf("%s received corral's static token %q", name, tok)
			}
		}
	}
}

// TestCredentialsStayInCorral: through an agent's API, neither Ironic
// (the os-baremetal-nodes proxy) nor Glance (a boot's image) ever receives
// one of corral's static tokens: they get corral's service users' tokens
// instead; a Keystone caller's own token reaches both, so that they judge
// the caller's rights.
func TestCredentialsStayInCorral(t *testing.T) {
	a := startCredsAgent(t, nil)
	if a.startErr != nil {
		t.Fatal(a.startErr)
	}
	defer a.noStaticTokens()

	// The proxy, with a static token: Ironic gets corral's service token.
	m := a.ironic.mark()
	if code, body := a.call(http.MethodGet, "/compute/v2.1/os-baremetal-nodes", credsAdmin, ""); code != http.StatusOK {
		t.Fatalf("proxy with a static token: %d %s", code, body)
	}
	for _, tok := range a.ironic.since(m) {
		if tok != "svc-corral-ironic" {
			t.Errorf("the proxy asked Ironic with %q for a static-token caller, want corral's service token", tok)
		}
	}
	// With a Keystone admin's token: Ironic gets that token.
	m = a.ironic.mark()
	if code, body := a.call(http.MethodGet, "/compute/v2.1/os-baremetal-nodes", "ks-admin-token", ""); code != http.StatusOK {
		t.Fatalf("proxy with a Keystone token: %d %s", code, body)
	}
	if got := a.ironic.since(m); !slices.Contains(got, "ks-admin-token") {
		t.Errorf("Ironic saw %q for a Keystone caller of the proxy, want the caller's token", got)
	}

	// Boots: the image is looked up in Glance.
	if code, body := a.call(http.MethodPost, "/compute/v2.1/flavors", credsAdmin,
		`{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`); code != http.StatusOK {
		t.Fatalf("flavor: %d %s", code, body)
	}
	boot := `{"server": {"name": "a", "imageRef": "` + credsImage + `", "flavorRef": "f"}}`
	m = a.glance.mark()
	code, body := a.call(http.MethodPost, "/compute/v2.1/servers", credsAdmin, boot)
	if got := a.glance.since(m); !slices.Equal(got, []string{"svc-corral-glance"}) {
		t.Errorf("Glance saw %q for a static-token caller's boot, want corral's [glance] service token", got)
	}
	if code != http.StatusAccepted {
		t.Errorf("boot with a static token: %d %s", code, body)
	}
	m = a.glance.mark()
	if code, body := a.call(http.MethodPost, "/compute/v2.1/servers", "ks-alice-token", boot); code != http.StatusAccepted {
		t.Errorf("boot with a Keystone token: %d %s", code, body)
	}
	if got := a.glance.since(m); !slices.Equal(got, []string{"ks-alice-token"}) {
		t.Errorf("Glance saw %q for a Keystone caller's boot, want the caller's token", got)
	}
}

// TestCredentialsProxyAsService: with baremetal_proxy_auth = service, the
// proxy asks Ironic as corral's service user for Keystone callers too;
// without a [glance] service user, a static-token caller's image lookup
// carries no token at all.
func TestCredentialsProxyAsService(t *testing.T) {
	a := startCredsAgent(t, func(c *agentConfig) {
		c.Ironic.ProxyAuth = proxyAuthService
		c.Glance.AuthType, c.Glance.Service = "", keystone.Options{}
	})
	if a.startErr != nil {
		t.Fatal(a.startErr)
	}
	defer a.noStaticTokens()
	m := a.ironic.mark()
	if code, body := a.call(http.MethodGet, "/compute/v2.1/os-baremetal-nodes", "ks-admin-token", ""); code != http.StatusOK {
		t.Fatalf("proxy with a Keystone token: %d %s", code, body)
	}
	for _, tok := range a.ironic.since(m) {
		if tok != "svc-corral-ironic" {
			t.Errorf("the proxy asked Ironic with %q, want corral's service token", tok)
		}
	}
	if code, body := a.call(http.MethodPost, "/compute/v2.1/flavors", credsAdmin,
		`{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`); code != http.StatusOK {
		t.Fatalf("flavor: %d %s", code, body)
	}
	m = a.glance.mark()
	a.call(http.MethodPost, "/compute/v2.1/servers", credsAdmin, `{"server": {"name": "a", "imageRef": "`+credsImage+`", "flavorRef": "f"}}`)
	if got := a.glance.since(m); !slices.Equal(got, []string{""}) {
		t.Errorf("Glance saw %q for a static-token caller's boot without a [glance] service user, want no token", got)
	}
}

// TestCredentialsGlanceUserRefused: an agent whose [glance] service user
// Keystone refuses stops at start, naming the options to fix.
func TestCredentialsGlanceUserRefused(t *testing.T) {
	a := startCredsAgent(t, func(c *agentConfig) { c.Glance.Service.Password = "wrong" })
	if a.startErr == nil || !strings.Contains(a.startErr.Error(), "[glance] username, password") {
		t.Fatalf("start with a wrong [glance] password: %v, want an error naming [glance] username, password", a.startErr)
	}
}
