package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Every refusal of the compute API is Nova's error body, under Nova's key
// for its status, whatever refused it: the router (404, 405), the body's
// media type (415) or size (413), the write rate (429), a handler.
func TestComputeErrorsAreNovas(t *testing.T) {
	t.Parallel()
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Limits = core.Limits{WriteRate: 0.01, WriteBurst: 40} })
	e.ks.issue(memberA, "ann", "demo-a", "member", "reader")
	before := e.digest()
	xml := map[string]string{"Content-Type": "application/xml"}
	cases := []struct {
		name, method, path, token, body string
		hdr                             map[string]string
		code                            int
		key, msg                        string
	}{
		{"unknown route to a member", "GET", computeBase + "/os-nothing", memberA, "", nil, 404, "itemNotFound", "The resource could not be found."},
		{"unknown route, written by a member", "POST", computeBase + "/os-nothing/x", memberA, "{}", nil, 404, "itemNotFound", "could not be found"},
		{"unknown route under a known one", "POST", computeBase + "/servers/x/y/z", memberA, "{}", nil, 404, "itemNotFound", "could not be found"},
		{"wrong method", "DELETE", computeBase + "/flavors", adminToken, "", nil, 405, "badMethod", "DELETE is not allowed"},
		{"wrong method, by a member", "PATCH", computeBase + "/servers", memberA, "{}", nil, 405, "badMethod", "PATCH is not allowed"},
		{"wrong method, by a reader", "PUT", computeBase + "/limits", readerToken, "{}", nil, 405, "badMethod", "not allowed"},
		{"a body that is not JSON", "POST", computeBase + "/flavors", adminToken, "<flavor/>", xml, 415, "badMediaType", "Unsupported Content-Type"},
		{"a read that says it sends XML", "GET", computeBase + "/flavors", adminToken, "", xml, 415, "badMediaType", "Unsupported Content-Type"},
		{"a form", "POST", computeBase + "/os-keypairs", memberA, "name=k", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "badMediaType", "Unsupported"},
		{"a body over the limit", "POST", computeBase + "/flavors", adminToken, `{"flavor": {"name": "` + strings.Repeat("x", core.DefaultMaxBodyBytes) + `"}}`, nil, 413, "overLimit", "larger than"},
		{"a microversion above the maximum", "GET", computeBase + "/flavors", adminToken, "", mv("9.0"), 406, "computeFault", "is not supported"},
		{"a lone surrogate", "POST", computeBase + "/flavors", adminToken, `{"flavor": {"name": "a\ud800", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "badRequest", "lone UTF-16 surrogate"},
		{"bytes that are no UTF-8", "POST", computeBase + "/flavors", adminToken, "{\"flavor\": {\"name\": \"a\xff\", \"ram\": 1, \"vcpus\": 1, \"disk\": 1}}", nil, 400, "badRequest", "not UTF-8"},
		{"no sentinel words", "POST", computeBase + "/flavors", adminToken, `{"flavor": {"name": "", "ram": 1, "vcpus": 1, "disk": 1}}`, nil, 400, "badRequest", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, e.ts, c.method, c.path, c.token, c.body, c.hdr)
			if r.code != c.code {
				t.Fatalf("%s %s: %s, want %d", c.method, c.path, r, c.code)
			}
			key, msg := errorMessage(t, r)
			if key != c.key || !strings.Contains(msg, c.msg) {
				t.Errorf("%s %s: %s, want %s with %q", c.method, c.path, r.body, c.key, c.msg)
			}
			for _, word := range []string{"bad request: ", "invalid: ", "not found: ", "conflict: "} {
				if strings.HasPrefix(msg, word) {
					t.Errorf("message %q starts with the sentinel's words", msg)
				}
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if r := do(t, e.ts, "DELETE", computeBase+"/flavors", adminToken, "", nil); !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Errorf("405 without an Allow header naming GET: %v", r.header)
	}
	if e.digest() != before {
		t.Error("a refused request changed the state")
	}

	// The write rate: 429 overLimit, with Retry-After in the body too.
	var r response
	for range 60 {
		if r = do(t, e.ts, "DELETE", computeBase+"/flavors/nope", adminToken, "", nil); r.code == http.StatusTooManyRequests {
			break
		}
	}
	if key, _ := errorMessage(t, r); r.code != http.StatusTooManyRequests || key != "overLimit" ||
		get(t, r.json(t), "overLimit", "retryAfter") != r.header.Get("Retry-After") {
		t.Errorf("rate limited: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
}

// The native API and Placement keep their own shapes for the same refusals.
func TestNativeAndPlacementErrorShapes(t *testing.T) {
	t.Parallel()
	e, _, _ := hypervisorEnv(t)
	kvm := fsm.HostProviderUUID("kvm-1")
	r := do(t, e.ts, "GET", "/placement/resource_providers/"+kvm+"/inventories/CUSTOM_NONE", adminToken, "", nil)
	if r.code != http.StatusNotFound || get(t, r.json(t), "errors", 0, "status") != 404.0 ||
		get(t, r.json(t), "errors", 0, "code") != "placement.undefined_code" {
		t.Errorf("an inventory the provider lacks: %s", r)
	}
	if r := do(t, e.ts, "GET", "/placement/resource_providers/"+kvm+"/inventories/VCPU", adminToken, "", nil); r.code != http.StatusOK {
		t.Errorf("an inventory the provider has: %s", r)
	}
	for _, c := range []struct {
		method, path, body string
		hdr                map[string]string
		code               int
		kind               string
	}{
		{"DELETE", wire.HostsPath, "", nil, 405, "method_not_allowed"},
		{"POST", wire.AdoptServerPath, "<x/>", map[string]string{"Content-Type": "text/xml"}, 415, "unsupported_media_type"},
		{"GET", "/v1/nothing", "", nil, 404, "not_found"},
	} {
		r := do(t, e.ts, c.method, c.path, adminToken, c.body, c.hdr)
		if key, _ := errorMessage(t, r); r.code != c.code || key != "error" || get(t, r.json(t), "error", "kind") != c.kind {
			t.Errorf("%s %s: %s, want %d %s", c.method, c.path, r, c.code, c.kind)
		}
	}
}
