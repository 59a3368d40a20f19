package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
)

func TestVersionDocuments(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/", "/compute", "/compute/"} {
		r := do(t, e.ts, http.MethodGet, p, "", "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("GET %s without a token: %s", p, r)
		}
		v := r.json(t)
		if get(t, v, "versions", 0, "id") != "v2.1" || get(t, v, "versions", 0, "version") != "2.79" ||
			get(t, v, "versions", 0, "links", 0, "href") != e.ts.URL+computeBase+"/" {
			t.Errorf("GET %s = %s", p, r.body)
		}
	}
}

func TestLimitsAndZones(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "bm", "id": "bm", "ram": 4096, "vcpus": 8, "disk": 10}}`)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "bm"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	r := do(t, e.ts, http.MethodGet, computeBase+"/limits", readerToken, "", nil)
	if r.code != http.StatusOK {
		t.Fatalf("limits: %s", r)
	}
	abs := get(t, r.json(t), "limits", "absolute").(map[string]any)
	if abs["totalInstancesUsed"] != float64(1) || abs["totalCoresUsed"] != float64(8) || abs["totalRAMUsed"] != float64(4096) ||
		abs["maxTotalInstances"] != float64(-1) || abs["maxPersonality"] == nil || abs["maxSecurityGroups"] == nil {
		t.Fatalf("limits at 2.1: %v", abs)
	}
	abs = get(t, do(t, e.ts, http.MethodGet, computeBase+"/limits", readerToken, "", mv("2.57")).json(t), "limits", "absolute").(map[string]any)
	for _, gone := range []string{"maxPersonality", "maxImageMeta", "maxSecurityGroups", "totalFloatingIpsUsed"} {
		if _, has := abs[gone]; has {
			t.Errorf("%s shown at 2.57: %v", gone, abs)
		}
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/limits?tenant_id=other", adminToken, "", nil); r.code != http.StatusOK ||
		get(t, r.json(t), "limits", "absolute", "totalInstancesUsed") != float64(0) {
		t.Fatalf("another project's limits: %s", r)
	}

	z := do(t, e.ts, http.MethodGet, computeBase+"/os-availability-zone", readerToken, "", nil)
	if z.code != http.StatusOK || get(t, z.json(t), "availabilityZoneInfo", 0, "zoneName") != "nova" ||
		get(t, z.json(t), "availabilityZoneInfo", 0, "zoneState", "available") != true {
		t.Fatalf("zones: %s", z)
	}
	d := do(t, e.ts, http.MethodGet, computeBase+"/os-availability-zone/detail", adminToken, "", nil)
	if d.code != http.StatusOK || get(t, d.json(t), "availabilityZoneInfo", 0, "hosts", e.peer.Name, "nova-compute", "available") != true {
		t.Fatalf("zone detail: %s", d)
	}
}

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

func TestHostIDAndNetworksByMicroversion(t *testing.T) {
	e, _, _ := hypervisorEnv(t)
	const inst = "a1b2c3d4-0000-4000-8000-000000000001"
	r := do(t, e.ts, http.MethodGet, computeBase+"/servers/"+inst, adminToken, "", nil)
	sum := sha256.Sum224([]byte("admin" + e.peer.Name))
	if got := get(t, r.json(t), "server", "hostId"); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("hostId = %v, want sha224(project+host)", got)
	}
	createFlavor(t, e, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	boot := `{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "f"}}`
	before := e.digest()
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, boot, mv("2.37")); r.code != http.StatusBadRequest {
		t.Fatalf("no networks at 2.37: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused boot changed the state")
	}
	withNone := `{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "f", "networks": "none"}}`
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, withNone, mv("2.37")); r.code != http.StatusAccepted {
		t.Fatalf("networks none at 2.37: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken, boot, mv("2.36")); r.code != http.StatusAccepted {
		t.Fatalf("no networks at 2.36: %s", r)
	}
}
