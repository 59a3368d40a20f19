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
		// v2.0 first, as Nova lists it; v2.1 is the API corral serves.
		if get(t, v, "versions", 0, "id") != "v2.0" || get(t, v, "versions", 0, "links", 0, "href") != e.ts.URL+"/compute/v2/" ||
			get(t, v, "versions", 1, "id") != "v2.1" || get(t, v, "versions", 1, "version") != "2.79" ||
			get(t, v, "versions", 1, "links", 0, "href") != e.ts.URL+computeBase+"/" {
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
