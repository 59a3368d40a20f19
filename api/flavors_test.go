package api_test

import (
	"net/http"
	"testing"
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
