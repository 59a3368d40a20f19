package api_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	aliceToken = "gAAAAA-alice-member-demo-a"
	carolToken = "gAAAAA-carol-reader-demo-a"
	bobToken   = "gAAAAA-bob-member-demo-b"
	ksAdmin    = "gAAAAA-admin-admin-admin"
	noRole     = "gAAAAA-dave-no-role-demo-a"
	wwwAuth    = `Keystone uri="http://keystone.test:5000"`
)

func (e *keystoneEnv) issueDemoTokens() {
	e.ks.issue(aliceToken, "alice", "demo-a", "member", "reader")
	e.ks.issue(carolToken, "carol", "demo-a", "reader")
	e.ks.issue(bobToken, "bob", "demo-b", "member", "reader")
	e.ks.issue(ksAdmin, "admin", "admin-project", "admin", "member", "reader")
	e.ks.issue(noRole, "dave", "demo-a", "heat_stack_owner")
}

// boot asks for a server with the token and returns its id.
func (e *keystoneEnv) boot(token, name, flavor string) string {
	e.t.Helper()
	r := do(e.t, e.ts, "POST", computeBase+"/servers", token,
		`{"server": {"name": "`+name+`", "imageRef": "img", "flavorRef": "`+flavor+`", "networks": "none"}}`, nil)
	if r.code != http.StatusAccepted {
		e.t.Fatalf("boot %s: %s", name, r)
	}
	return get(e.t, r.json(e.t), "server", "id").(string)
}

// serverIDs lists the servers the token sees at path.
func (e *keystoneEnv) serverIDs(token, path string) ([]string, response) {
	e.t.Helper()
	r := do(e.t, e.ts, "GET", computeBase+path, token, "", nil)
	if r.code != http.StatusOK {
		return nil, r
	}
	var ids []string
	for _, s := range get(e.t, r.json(e.t), "servers").([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	return ids, response{} // success: code 0
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

// TestKeystonePolicy checks Nova's default policy with Keystone tokens:
// admin may do everything; member and reader act within their project,
// where another project's server is a 404; refusals write nothing.
func TestKeystonePolicy(t *testing.T) {
	e := newKeystoneEnv(t, time.Minute)
	e.issueDemoTokens()
	r := do(t, e.ts, "POST", computeBase+"/flavors", ksAdmin, `{"flavor": {"id": "bm", "name": "bm", "ram": 512, "vcpus": 1, "disk": 1}}`, nil)
	if r.code != http.StatusOK {
		t.Fatalf("a Keystone admin creates a flavor: %s", r)
	}
	a1, a2 := e.boot(aliceToken, "a1", "bm"), e.boot(aliceToken, "a2", "bm")
	b1 := e.boot(bobToken, "b1", "bm")
	static := e.boot(adminToken, "static", "bm")

	// The servers carry the caller's project and user.
	r = do(t, e.ts, "GET", computeBase+"/servers/"+a1, carolToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("carol (reader of demo-a) shows alice's server: %s", r)
	}
	if p, u := get(t, r.json(t), "server", "tenant_id"), get(t, r.json(t), "server", "user_id"); p != "demo-a" || u != "alice-id" {
		t.Errorf("alice's server has tenant_id %v, user_id %v; want demo-a, alice-id", p, u)
	}
	st, err := e.peer.Node.Store().Server(b1)
	if err != nil || st.ProjectID != "demo-b" || st.UserID != "bob-id" {
		t.Errorf("bob's server in the state: %+v, %v", st, err)
	}
	if sv, _ := e.peer.Node.Store().Server(static); sv.Project() != "admin" {
		t.Errorf("a server booted with a static token has project %q, want admin", sv.Project())
	}

	lists := []struct {
		who, token, path string
		want             []string
	}{
		{"alice", aliceToken, "/servers", sorted(a1, a2)},
		{"carol", carolToken, "/servers/detail", sorted(a1, a2)},
		{"bob", bobToken, "/servers", []string{b1}},
		{"keystone admin, own project", ksAdmin, "/servers", nil},
		{"keystone admin, all_tenants", ksAdmin, "/servers?all_tenants=1", sorted(a1, a2, b1, static)},
		{"keystone admin, all_tenants of demo-b", ksAdmin, "/servers/detail?all_tenants=True&project_id=demo-b", []string{b1}},
		{"static admin", adminToken, "/servers", sorted(a1, a2, b1, static)},
		{"static reader", readerToken, "/servers?tenant_id=demo-a", sorted(a1, a2)},
	}
	for _, l := range lists {
		got, r := e.serverIDs(l.token, l.path)
		if r.code != 0 || !slices.Equal(got, l.want) {
			t.Errorf("%s lists %s: %v (%v), want %v", l.who, l.path, got, r, l.want)
		}
	}

	before := e.digest()
	refusals := []struct {
		name, token, method, path, body string
		code                            int
	}{
		{"bob shows alice's server", bobToken, "GET", computeBase + "/servers/" + a1, "", 404},
		{"bob deletes alice's server", bobToken, "DELETE", computeBase + "/servers/" + a1, "", 404},
		{"carol (reader) deletes in her project", carolToken, "DELETE", computeBase + "/servers/" + a1, "", 403},
		{"carol (reader) boots", carolToken, "POST", computeBase + "/servers", `{"server": {"name": "c", "imageRef": "i", "flavorRef": "bm"}}`, 403},
		{"alice lists every project", aliceToken, "GET", computeBase + "/servers?all_tenants=1", "", 403},
		{"alice, bad all_tenants", aliceToken, "GET", computeBase + "/servers?all_tenants=maybe", "", 400},
		{"alice creates a flavor", aliceToken, "POST", computeBase + "/flavors", `{"flavor": {"name": "x", "ram": 1, "vcpus": 1, "disk": 1}}`, 403},
		{"alice deletes a flavor", aliceToken, "DELETE", computeBase + "/flavors/bm", "", 403},
		{"alice drains a host", aliceToken, "POST", "/v1/hosts/" + e.peer.Name + "/drain", "", 403},
		{"alice reads the cluster", aliceToken, "GET", "/v1/hosts", "", 403},
		{"alice reads placement", aliceToken, "GET", "/placement/resource_providers", "", 403},
		{"alice writes placement", aliceToken, "POST", "/placement/traits", "{}", 403},
		{"a token without a known role lists", noRole, "GET", computeBase + "/servers", "", 403},
		{"a token without a known role boots", noRole, "POST", computeBase + "/servers", `{"server": {"name": "d", "imageRef": "i", "flavorRef": "bm"}}`, 403},
	}
	for _, c := range refusals {
		r := do(t, e.ts, c.method, c.path, c.token, c.body, nil)
		if r.code != c.code {
			t.Errorf("%s: %s, want %d", c.name, r, c.code)
			continue
		}
		if strings.HasPrefix(c.path, "/placement") {
			if !strings.Contains(string(r.body), "admin role") {
				t.Errorf("%s: %s does not say what is needed", c.name, r.body)
			}
		} else if _, msg := errorMessage(t, r); msg == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	if e.digest() != before {
		t.Error("refused requests changed the state")
	}

	// Reads open to every project role, and admin's powers.
	for _, tok := range []string{aliceToken, carolToken, bobToken} {
		if r := do(t, e.ts, "GET", computeBase+"/flavors/bm", tok, "", nil); r.code != http.StatusOK {
			t.Errorf("flavor read with a project token: %s", r)
		}
	}
	if r := do(t, e.ts, "GET", computeBase+"/servers/"+a1, ksAdmin, "", nil); r.code != http.StatusOK {
		t.Errorf("a Keystone admin shows alice's server: %s", r)
	}
	if r := do(t, e.ts, "GET", "/v1/hosts", ksAdmin, "", nil); r.code != http.StatusOK {
		t.Errorf("a Keystone admin reads /v1/hosts: %s", r)
	}
	if r := do(t, e.ts, "GET", "/placement/resource_providers", ksAdmin, "", nil); r.code != http.StatusOK {
		t.Errorf("a Keystone admin reads placement: %s", r)
	}
	if r := do(t, e.ts, "DELETE", computeBase+"/servers/"+a2, aliceToken, "", nil); r.code != http.StatusNoContent {
		t.Errorf("alice deletes her server: %s", r)
	}
	if r := do(t, e.ts, "DELETE", computeBase+"/servers/"+b1, ksAdmin, "", nil); r.code != http.StatusNoContent {
		t.Errorf("a Keystone admin deletes bob's server: %s", r)
	}
	if got, r := e.serverIDs(aliceToken, "/servers"); !slices.Equal(got, []string{a1}) {
		t.Errorf("alice after the deletes: %v %v", got, r)
	}
}

// TestKeystoneUnauthorized: a missing, unknown, revoked or malformed token
// is a 401 that names Keystone in WWW-Authenticate, and writes nothing.
func TestKeystoneUnauthorized(t *testing.T) {
	e := newKeystoneEnv(t, -1) // no cache: a revocation shows at once
	e.issueDemoTokens()
	before := e.digest()
	boot := `{"server": {"name": "x", "imageRef": "i", "flavorRef": "f"}}`
	cases := []struct {
		name string
		hdr  map[string]string
		tok  string
	}{
		{"no token", nil, ""},
		{"a token of another Keystone", nil, "gAAAAA-issued-by-another-keystone"},
		{"a token with a space", map[string]string{"X-Auth-Token": "gAAAAA bad"}, ""},
		{"a token that is not ASCII", map[string]string{"X-Auth-Token": "gAAAAA\xe9bad"}, ""},
	}
	for _, c := range cases {
		for _, m := range []struct{ method, path, body string }{
			{"GET", computeBase + "/servers", ""}, {"POST", computeBase + "/servers", boot}, {"GET", "/v1/hosts", ""},
		} {
			r := do(t, e.ts, m.method, m.path, c.tok, m.body, c.hdr)
			if r.code != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != wwwAuth {
				t.Errorf("%s, %s %s: %s (WWW-Authenticate %q), want 401 with %s", c.name, m.method, m.path, r,
					r.header.Get("WWW-Authenticate"), wwwAuth)
			}
		}
	}
	// Two X-Auth-Token headers.
	req, _ := http.NewRequest("GET", e.ts.URL+computeBase+"/servers", nil)
	req.Header.Add("X-Auth-Token", aliceToken)
	req.Header.Add("X-Auth-Token", bobToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("two X-Auth-Token headers: %d, want 401", resp.StatusCode)
	}

	if _, r := e.serverIDs(aliceToken, "/servers"); r.code != 0 {
		t.Fatalf("alice before the revocation: %s", r)
	}
	e.ks.revoke(aliceToken)
	if r := do(t, e.ts, "GET", computeBase+"/servers", aliceToken, "", nil); r.code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %s, want 401", r)
	}
	// The static token of the cluster (peers forward with it) still works.
	if r := do(t, e.ts, "GET", "/v1/hosts", adminToken, "", nil); r.code != http.StatusOK {
		t.Errorf("static admin token with Keystone on: %s", r)
	}
	if e.digest() != before {
		t.Error("refused requests changed the state")
	}
}

// TestKeystoneDown: tokens validated within token_cache_time are still
// served while Keystone is unreachable; new ones are a 503, not a 401.
func TestKeystoneDown(t *testing.T) {
	e := newKeystoneEnv(t, time.Hour)
	e.issueDemoTokens()
	if _, r := e.serverIDs(aliceToken, "/servers"); r.code != 0 {
		t.Fatalf("alice: %s", r)
	}
	e.ks.down.Store(true)
	if _, r := e.serverIDs(aliceToken, "/servers"); r.code != 0 {
		t.Errorf("alice's cached token with Keystone down: %s", r)
	}
	before := e.digest()
	r := do(t, e.ts, "POST", computeBase+"/servers", bobToken, `{"server": {"name": "x", "imageRef": "i", "flavorRef": "f"}}`, nil)
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("bob's new token with Keystone down: %s (Retry-After %q), want 503", r, r.header.Get("Retry-After"))
	} else if _, msg := errorMessage(t, r); !strings.Contains(msg, "Keystone") {
		t.Errorf("the 503 does not say Keystone is the cause: %q", msg)
	}
	if e.digest() != before {
		t.Error("a refused boot changed the state")
	}
	e.ks.down.Store(false)
	if _, r := e.serverIDs(bobToken, "/servers"); r.code != 0 {
		t.Errorf("bob once Keystone is back: %s", r)
	}
}

// TestKeystoneCoalesced: a cold token carried by many concurrent requests
// costs one validation.
func TestKeystoneCoalesced(t *testing.T) {
	e := newKeystoneEnv(t, time.Hour)
	e.issueDemoTokens()
	var wg sync.WaitGroup
	codes := make(chan int, 32)
	for range 32 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", e.ts.URL+computeBase+"/servers", nil)
			req.Header.Set("X-Auth-Token", aliceToken)
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				codes <- 0
				return
			}
			_ = resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("concurrent request: %d", c)
		}
	}
	if n := e.ks.validates.Load(); n != 1 {
		t.Errorf("32 concurrent requests with one cold token made %d validations, want 1", n)
	}
}
