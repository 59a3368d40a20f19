package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func createFlavor(t *testing.T, e *env, body string) {
	t.Helper()
	if r := do(t, e.ts, http.MethodPost, computeBase+"/flavors", adminToken, body, nil); r.code != http.StatusOK {
		t.Fatalf("create flavor: %s", r)
	}
}

func TestFlavorDescriptionUpdate(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "bm", "id": "bm", "ram": 1, "vcpus": 1, "disk": 1}}`)
	path := computeBase + "/flavors/bm"
	if r := do(t, e.ts, http.MethodPut, path, adminToken, `{"flavor": {"description": "x"}}`, mv("2.54")); r.code != http.StatusNotFound {
		t.Fatalf("below 2.55: %s", r)
	}
	r := do(t, e.ts, http.MethodPut, path, adminToken, `{"flavor": {"description": "GPU nodes"}}`, mv("2.55"))
	if r.code != http.StatusOK || get(t, r.json(t), "flavor", "description") != "GPU nodes" {
		t.Fatalf("update: %s", r)
	}
	if f, _ := e.peer.Node.Store().Flavor("bm"); f.Description != "GPU nodes" {
		t.Fatalf("stored flavor %+v", f)
	}
	before := e.digest()
	for _, bad := range []string{`{"flavor": {"name": "y"}}`, `{"flavor": {}}`, `{"flavor": {"description": 3}}`} {
		if r := do(t, e.ts, http.MethodPut, path, adminToken, bad, mv("2.55")); r.code != http.StatusBadRequest {
			t.Errorf("PUT %s: %s", bad, r)
		}
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/flavors/nope", adminToken, `{"flavor": {"description": "x"}}`, mv("2.55")); r.code != http.StatusNotFound {
		t.Errorf("unknown flavor: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, path, readerToken, `{"flavor": {"description": "x"}}`, mv("2.55")); r.code != http.StatusForbidden {
		t.Errorf("reader: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused update changed the state")
	}
	r = do(t, e.ts, http.MethodPut, path, adminToken, `{"flavor": {"description": null}}`, mv("2.55"))
	if r.code != http.StatusOK || get(t, r.json(t), "flavor", "description") != nil {
		t.Fatalf("clear: %s", r)
	}
}

func TestFlavorAccess(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "priv", "id": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": false}}`)
	createFlavor(t, e, `{"flavor": {"name": "pub", "id": "pub", "ram": 1, "vcpus": 1, "disk": 1}}`)
	acc := computeBase + "/flavors/priv/os-flavor-access"
	if r := do(t, e.ts, http.MethodGet, acc, adminToken, "", nil); r.code != http.StatusOK || len(get(t, r.json(t), "flavor_access").([]any)) != 0 {
		t.Fatalf("empty access list: %s", r)
	}
	act := computeBase + "/flavors/priv/action"
	r := do(t, e.ts, http.MethodPost, act, adminToken, `{"addTenantAccess": {"tenant": "p1"}}`, nil)
	if r.code != http.StatusOK || get(t, r.json(t), "flavor_access", 0, "tenant_id") != "p1" || get(t, r.json(t), "flavor_access", 0, "flavor_id") != "priv" {
		t.Fatalf("add: %s", r)
	}
	// The admin's own project has no access: the private flavor is not in its default list.
	l := do(t, e.ts, http.MethodGet, computeBase+"/flavors", adminToken, "", nil).json(t)
	if n := len(get(t, l, "flavors").([]any)); n != 1 {
		t.Fatalf("default list shows %d flavors, want the public one: %v", n, l)
	}
	l = do(t, e.ts, http.MethodGet, computeBase+"/flavors?is_public=none", adminToken, "", nil).json(t)
	if n := len(get(t, l, "flavors").([]any)); n != 2 {
		t.Fatalf("is_public=none shows %d flavors: %v", n, l)
	}
	before := e.digest()
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{act, `{"addTenantAccess": {"tenant": "p1"}}`, http.StatusConflict},
		{act, `{"removeTenantAccess": {"tenant": "p2"}}`, http.StatusNotFound},
		{act, `{"addTenantAccess": {}}`, http.StatusBadRequest},
		{act, `{"rename": {}}`, http.StatusBadRequest},
		{computeBase + "/flavors/pub/action", `{"addTenantAccess": {"tenant": "p1"}}`, http.StatusConflict},
		{computeBase + "/flavors/nope/action", `{"addTenantAccess": {"tenant": "p1"}}`, http.StatusNotFound},
	} {
		if r := do(t, e.ts, http.MethodPost, tc.path, adminToken, tc.body, nil); r.code != tc.code {
			t.Errorf("POST %s %s: %s, want %d", tc.path, tc.body, r, tc.code)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/flavors/pub/os-flavor-access", adminToken, "", nil); r.code != http.StatusNotFound {
		t.Errorf("public flavor's access list: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused access changes changed the state")
	}
	r = do(t, e.ts, http.MethodPost, act, adminToken, `{"removeTenantAccess": {"tenant": "p1"}}`, nil)
	if r.code != http.StatusOK || len(get(t, r.json(t), "flavor_access").([]any)) != 0 {
		t.Fatalf("remove: %s", r)
	}
}

// TestFlavorListIsPublicWords holds is_public to Nova's reading: oslo's
// boolean words in any case, "none" for every flavor, Nova's 400 for any
// other value (the empty one too), and no filter at all for a project.
func TestFlavorListIsPublicWords(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "priv", "id": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": "False"}}`)
	createFlavor(t, e, `{"flavor": {"name": "pub", "id": "pub", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": "True"}}`)
	names := func(query string) []string {
		t.Helper()
		r := do(t, e.ts, http.MethodGet, computeBase+"/flavors/detail?"+query, adminToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("%s: %s", query, r)
		}
		var out []string
		for _, f := range get(t, r.json(t), "flavors").([]any) {
			out = append(out, f.(map[string]any)["name"].(string))
		}
		return out
	}
	for _, word := range []string{"f", "false", "off", "n", "no", "0", "F", "FALSE", "No", "%20off%20"} {
		if got := names("is_public=" + word); len(got) != 1 || got[0] != "priv" {
			t.Errorf("is_public=%s lists %v, want the private flavor", word, got)
		}
	}
	for _, word := range []string{"t", "true", "on", "y", "yes", "1", "T", "True", "YES"} {
		if got := names("is_public=" + word); len(got) != 1 || got[0] != "pub" {
			t.Errorf("is_public=%s lists %v, want the public flavor", word, got)
		}
	}
	for _, word := range []string{"none", "None", "NONE"} {
		if got := names("is_public=" + word); len(got) != 2 {
			t.Errorf("is_public=%s lists %v, want both", word, got)
		}
	}
	for _, word := range []string{"", "maybe", "2", "truee", "%20none"} {
		r := do(t, e.ts, http.MethodGet, computeBase+"/flavors?is_public="+word, adminToken, "", nil)
		want := "Invalid is_public filter [" + strings.ReplaceAll(word, "%20", " ") + "]"
		if r.code != http.StatusBadRequest || get(t, r.json(t), "badRequest", "message") != want {
			t.Errorf("is_public=%q: %s, want 400 %q", word, r, want)
		}
	}
}

// TestFlavorListIsPublicIgnoredForProjects: a project's flavor list is the
// flavors it may use, whatever is_public says, and no value is refused.
func TestFlavorListIsPublicIgnoredForProjects(t *testing.T) {
	e := newKeystoneEnv(t, time.Minute)
	e.issueDemoTokens()
	createFlavor(t, e.env, `{"flavor": {"name": "priv", "id": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": false}}`)
	createFlavor(t, e.env, `{"flavor": {"name": "pub", "id": "pub", "ram": 1, "vcpus": 1, "disk": 1}}`)
	for _, q := range []string{"", "?is_public=false", "?is_public=none", "?is_public=maybe", "?is_public="} {
		r := do(t, e.ts, http.MethodGet, computeBase+"/flavors"+q, aliceToken, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("%s: %s", q, r)
		}
		if fl := get(t, r.json(t), "flavors").([]any); len(fl) != 1 || get(t, fl[0], "name") != "pub" {
			t.Errorf("%s lists %v, want the public flavor", q, fl)
		}
	}
}
