package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/api"
)

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	paths := []struct{ method, path, token string }{
		{"GET", "/healthz", ""},
		{"GET", "/v1/cluster/raft", adminToken},
		{"GET", "/v1/cluster/raft", ""},               // 401
		{"GET", "/v1/hosts/nope", adminToken},         // 404
		{"GET", computeBase + "/flavors", adminToken}, // compute
		{"POST", computeBase + "/flavors", adminToken},
		{"GET", "/no/such/route", adminToken},
	}
	for _, p := range paths {
		r := do(t, e.ts, p.method, p.path, p.token, "", nil)
		rid := r.header.Get("X-OpenStack-Request-Id")
		if !requestIDRE.MatchString(rid) {
			t.Errorf("%s %s (%d): X-OpenStack-Request-Id = %q, want req-<uuid>", p.method, p.path, r.code, rid)
		}
		if got := r.header.Get("X-Compute-Request-Id"); got != rid {
			t.Errorf("%s %s: X-Compute-Request-Id = %q, want %q", p.method, p.path, got, rid)
		}
	}

	a := do(t, e.ts, "GET", "/healthz", "", "", nil).header.Get("X-OpenStack-Request-Id")
	b := do(t, e.ts, "GET", "/healthz", "", "", nil).header.Get("X-OpenStack-Request-Id")
	if a == b {
		t.Errorf("two requests got the same id %s", a)
	}

	mine := "req-" + uuid.NewString()
	r := do(t, e.ts, "GET", "/v1/hosts/nope", adminToken, "", map[string]string{"X-OpenStack-Request-Id": mine})
	if got := r.header.Get("X-OpenStack-Request-Id"); got != mine {
		t.Errorf("well-formed incoming id not echoed: got %q, want %q", got, mine)
	}
	if got := get(t, r.json(t), "error", "request_id"); got != mine {
		t.Errorf("native error body request_id = %v, want %s", got, mine)
	}

	for _, bad := range []string{"abc", "req-123", strings.ToUpper(mine), mine + "0", "x" + mine} {
		r := do(t, e.ts, "GET", "/healthz", "", "", map[string]string{"X-OpenStack-Request-Id": bad})
		if got := r.header.Get("X-OpenStack-Request-Id"); got == bad || !requestIDRE.MatchString(got) {
			t.Errorf("malformed incoming id %q: response id %q, want a fresh req-<uuid>", bad, got)
		}
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"flavor": {"name": "auth", "ram": 512, "vcpus": 1, "disk": 1}}`

	t.Run("no token", func(t *testing.T) {
		r := do(t, e.ts, "GET", "/v1/cluster/members", "", "", nil)
		if r.code != http.StatusUnauthorized {
			t.Fatalf("got %s, want 401", r)
		}
		key, msg := errorMessage(t, r)
		if key != "error" || get(t, r.json(t), "error", "kind") != "unauthorized" || !strings.Contains(msg, "X-Auth-Token") {
			t.Errorf("native 401 body: %s", r.body)
		}
		r = do(t, e.ts, "GET", computeBase+"/flavors", "", "", nil)
		if key, msg := errorMessage(t, r); r.code != http.StatusUnauthorized || key != "unauthorized" || !strings.Contains(msg, "token") {
			t.Errorf("compute 401 body: %s", r)
		}
	})

	t.Run("unknown token", func(t *testing.T) {
		for _, tok := range []string{"admin-token-2", "admin-token-", "ADMIN-TOKEN-1", readerToken + "x"} {
			r := do(t, e.ts, "GET", "/v1/cluster/raft", tok, "", nil)
			if r.code != http.StatusUnauthorized {
				t.Fatalf("token %q: got %s, want 401", tok, r)
			}
			if _, msg := errorMessage(t, r); !strings.Contains(msg, "not known") {
				t.Errorf("token %q: message %q does not say the token is unknown", tok, msg)
			}
		}
	})

	t.Run("bearer", func(t *testing.T) {
		r := do(t, e.ts, "GET", "/v1/cluster/raft", "", "", map[string]string{"Authorization": "Bearer " + adminToken})
		if r.code != http.StatusOK {
			t.Fatalf("bearer admin: %s", r)
		}
		r = do(t, e.ts, "GET", "/v1/cluster/raft", "", "", map[string]string{"Authorization": "Basic " + adminToken})
		if r.code != http.StatusUnauthorized {
			t.Fatalf("basic auth: got %s, want 401", r)
		}
		r = do(t, e.ts, "POST", computeBase+"/flavors", "", body, map[string]string{"Authorization": "Bearer " + readerToken})
		if r.code != http.StatusForbidden {
			t.Fatalf("bearer reader write: got %s, want 403", r)
		}
	})

	t.Run("reader", func(t *testing.T) {
		before := e.digest()
		for _, w := range []struct{ method, path, body string }{
			{"POST", computeBase + "/flavors", body},
			{"DELETE", computeBase + "/flavors/x", ""},
			{"POST", computeBase + "/flavors/x/os-extra_specs", `{"extra_specs": {"a": "b"}}`},
			{"PUT", computeBase + "/flavors/x/os-extra_specs/a", `{"a": "b"}`},
			{"POST", "/v1/agent/leave", ""},
		} {
			r := do(t, e.ts, w.method, w.path, readerToken, w.body, nil)
			if r.code != http.StatusForbidden {
				t.Errorf("reader %s %s: got %s, want 403", w.method, w.path, r)
				continue
			}
			if _, msg := errorMessage(t, r); !strings.Contains(msg, "reader") || !strings.Contains(msg, "admin token") {
				t.Errorf("reader %s %s: message %q should name the role and the fix", w.method, w.path, msg)
			}
		}
		r := do(t, e.ts, "GET", api.ReadIndexPath, readerToken, "", nil)
		if r.code != http.StatusForbidden {
			t.Errorf("reader on an internal endpoint: got %s, want 403", r)
		}
		if after := e.digest(); after != before {
			t.Errorf("forbidden writes changed the state")
		}
		for _, path := range []string{"/v1/cluster/members", "/v1/cluster/raft", "/v1/hosts", computeBase + "/flavors",
			computeBase + "/flavors/detail", computeBase + "/"} {
			if r := do(t, e.ts, "GET", path, readerToken, "", nil); r.code != http.StatusOK {
				t.Errorf("reader GET %s: %s", path, r)
			}
		}
	})

	t.Run("admin writes", func(t *testing.T) {
		r := do(t, e.ts, "POST", computeBase+"/flavors", adminToken, body, nil)
		if r.code != http.StatusOK {
			t.Fatalf("admin create: %s", r)
		}
	})

	t.Run("public endpoints need no token", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if r := do(t, e.ts, "GET", path, "", "", nil); r.code != http.StatusOK {
				t.Errorf("GET %s without a token: %s", path, r)
			}
			if r := do(t, e.ts, "GET", path, "wrong-token-9", "", nil); r.code != http.StatusOK {
				t.Errorf("GET %s with a wrong token: %s", path, r)
			}
		}
	})
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := do(t, e.ts, "GET", "/healthz", "", "", nil)
	if r.code != http.StatusOK || strings.TrimSpace(string(r.body)) != "ok" {
		t.Errorf("healthz: %s", r)
	}
	r = do(t, e.ts, "GET", "/readyz", "", "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("readyz: %s", r)
	}
	for _, line := range []string{"[+]raft ok: leader p1", "[+]gossip ok", "[+]fsm ok", "readyz check passed"} {
		if !strings.Contains(string(r.body), line) {
			t.Errorf("readyz body lacks %q:\n%s", line, r.body)
		}
	}
	if strings.Contains(string(r.body), "[-]") {
		t.Errorf("readyz of a ready peer has a failed check:\n%s", r.body)
	}

	do(t, e.ts, "GET", "/v1/hosts/nope", adminToken, "", nil)
	r = do(t, e.ts, "GET", "/metrics", "", "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("metrics: %s", r)
	}
	text := string(r.body)
	for _, want := range []string{
		"corral_raft_term ",
		"corral_http_request_duration_seconds_bucket{",
		`corral_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"}`,
		`corral_http_request_duration_seconds_count{method="GET",route="/v1/hosts/:name",status="404"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestClusterAndHostEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	r := do(t, e.ts, "GET", "/v1/cluster/members", adminToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("members: %s", r)
	}
	v := r.json(t)
	if n := len(get(t, v, "members").([]any)); n != 1 {
		t.Fatalf("members of a one-peer cluster: %d: %s", n, r.body)
	}
	m := get(t, v, "members", 0)
	for k, want := range map[string]any{"name": "p1", "status": "alive"} {
		if got := get(t, m, k); got != want {
			t.Errorf("member %s = %v, want %v", k, got, want)
		}
	}
	if addr, _ := get(t, m, "address").(string); addr == "" {
		t.Errorf("member address is empty: %s", r.body)
	}
	if get(t, m, "raft", "suffrage") != "voter" || get(t, m, "raft", "leader") != true {
		t.Errorf("member raft = %v, want voter leader", get(t, m, "raft"))
	}

	r = do(t, e.ts, "GET", "/v1/cluster/raft", adminToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("raft: %s", r)
	}
	v = r.json(t)
	for _, k := range []string{"leader", "term", "commit_index", "applied_index", "last_snapshot_index", "voters", "nonvoters"} {
		get(t, v, k)
	}
	if v["leader"] != "p1" || v["state"] != "leader" {
		t.Errorf("raft leader/state = %v/%v", v["leader"], v["state"])
	}
	if term, _ := v["term"].(float64); term < 1 {
		t.Errorf("term = %v", v["term"])
	}
	commit, _ := v["commit_index"].(float64)
	applied, _ := v["applied_index"].(float64)
	if applied < 1 || commit < 1 {
		t.Errorf("commit %v / applied %v", commit, applied)
	}
	if voters, _ := v["voters"].([]any); !slices.Equal(voters, []any{"p1"}) {
		t.Errorf("voters = %v", v["voters"])
	}
	if nv, ok := v["nonvoters"].([]any); !ok || len(nv) != 0 {
		t.Errorf("nonvoters = %#v, want []", v["nonvoters"])
	}

	for _, q := range []string{"", "?consistency=stale", "?consistency=default", "?consistency=linearizable"} {
		r = do(t, e.ts, "GET", "/v1/hosts"+q, adminToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("hosts%s: %s", q, r)
		}
		hs := get(t, r.json(t), "hosts").([]any)
		if len(hs) != 1 || get(t, hs[0], "name") != "p1" || get(t, hs[0], "status") != "up" || get(t, hs[0], "api_address") != "p1.api:1" {
			t.Errorf("hosts%s = %s", q, r.body)
		}
		r = do(t, e.ts, "GET", "/v1/hosts/p1"+q, adminToken, "", nil)
		if r.code != http.StatusOK || get(t, r.json(t), "host", "name") != "p1" || get(t, r.json(t), "host", "kind") != "ironic" {
			t.Errorf("host p1%s: %s", q, r)
		}
	}

	r = do(t, e.ts, "GET", "/v1/hosts/nope", adminToken, "", nil)
	if r.code != http.StatusNotFound {
		t.Fatalf("unknown host: %s", r)
	}
	key, msg := errorMessage(t, r)
	if key != "error" || get(t, r.json(t), "error", "kind") != "not_found" || !strings.Contains(msg, "nope") {
		t.Errorf("unknown host error: %s", r.body)
	}

	for _, path := range []string{"/v1/hosts", "/v1/hosts/p1", computeBase + "/flavors", computeBase + "/flavors/detail", computeBase + "/flavors/x"} {
		r = do(t, e.ts, "GET", path+"?consistency=bogus", adminToken, "", nil)
		if r.code != http.StatusBadRequest {
			t.Errorf("%s?consistency=bogus: got %s, want 400", path, r)
			continue
		}
		if _, msg := errorMessage(t, r); !strings.Contains(msg, "bogus") || !strings.Contains(msg, "linearizable") {
			t.Errorf("%s?consistency=bogus: message %q should name the value and the choices", path, msg)
		}
	}
	if k := get(t, do(t, e.ts, "GET", "/v1/hosts?consistency=bogus", adminToken, "", nil).json(t), "error", "kind"); k != "invalid" {
		t.Errorf("bad consistency kind = %v", k)
	}

	r = do(t, e.ts, "POST", "/v1/agent/leave", adminToken, "", nil)
	if r.code != http.StatusNotImplemented {
		t.Errorf("leave without OnLeave: got %s, want 501", r)
	}
	r = do(t, e.ts, "DELETE", "/v1/hosts/p1", adminToken, "", nil)
	if r.code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /v1/hosts/p1: got %s, want 405", r)
	}
}

func TestComputeMicroversion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		hdr    map[string]string
		code   int
		echoed string
	}{
		{nil, 200, "2.1"},
		{map[string]string{"OpenStack-API-Version": "compute 2.60"}, 200, "2.60"},
		{map[string]string{"OpenStack-API-Version": "compute 2.1"}, 200, "2.1"},
		{map[string]string{"OpenStack-API-Version": "compute 2.79"}, 200, "2.79"},
		{map[string]string{"OpenStack-API-Version": "compute latest"}, 200, "2.79"},
		{map[string]string{"OpenStack-API-Version": "volume 3.5, compute 2.53"}, 200, "2.53"},
		{map[string]string{"OpenStack-API-Version": "volume 3.5"}, 200, "2.1"},
		{map[string]string{"X-OpenStack-Nova-API-Version": "2.40"}, 200, "2.40"},
		{map[string]string{"OpenStack-API-Version": "compute 9.0"}, 406, ""},
		{map[string]string{"OpenStack-API-Version": "compute 2.80"}, 406, ""},
		{map[string]string{"OpenStack-API-Version": "compute 2.0"}, 406, ""},
		{map[string]string{"X-OpenStack-Nova-API-Version": "3.0"}, 406, ""},
		{map[string]string{"OpenStack-API-Version": "compute two"}, 400, ""},
		{map[string]string{"OpenStack-API-Version": "compute 2"}, 400, ""},
	}
	for _, c := range cases {
		r := do(t, e.ts, "GET", computeBase+"/flavors", adminToken, "", c.hdr)
		if r.code != c.code {
			t.Errorf("%v: got %s, want %d", c.hdr, r, c.code)
			continue
		}
		if c.code != 200 {
			key, msg := errorMessage(t, r)
			if c.code == 406 && (key != "computeFault" || !strings.Contains(msg, "Minimum is 2.1 and maximum is 2.79")) {
				t.Errorf("%v: 406 body %s", c.hdr, r.body)
			}
			if c.code == 400 && key != "badRequest" {
				t.Errorf("%v: 400 body %s", c.hdr, r.body)
			}
			continue
		}
		if got := r.header.Get("OpenStack-API-Version"); got != "compute "+c.echoed {
			t.Errorf("%v: OpenStack-API-Version = %q, want compute %s", c.hdr, got, c.echoed)
		}
		if got := r.header.Get("X-OpenStack-Nova-API-Version"); got != c.echoed {
			t.Errorf("%v: X-OpenStack-Nova-API-Version = %q, want %s", c.hdr, got, c.echoed)
		}
		if !strings.Contains(r.header.Get("Vary"), "OpenStack-API-Version") {
			t.Errorf("%v: Vary = %q", c.hdr, r.header.Get("Vary"))
		}
	}

	for _, path := range []string{computeBase + "/", computeBase} {
		r := do(t, e.ts, "GET", path, readerToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("version document at %s: %s", path, r)
		}
		v := get(t, r.json(t), "version")
		for k, want := range map[string]any{"id": "v2.1", "status": "CURRENT", "version": "2.79", "min_version": "2.1"} {
			if got := get(t, v, k); got != want {
				t.Errorf("version %s = %v, want %v", k, got, want)
			}
		}
		if get(t, v, "links", 0, "rel") != "self" || get(t, v, "links", 0, "href") != e.ts.URL+computeBase+"/" {
			t.Errorf("version links = %v", get(t, v, "links"))
		}
	}
}
