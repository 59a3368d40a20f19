package api_test

import (
	"net/http"
	"testing"
)

const quotaSets = computeBase + "/os-quota-sets/"

// setDefaultClass sets the default quota class's limits (an admin's).
func setDefaultClass(t *testing.T, e *env, body string) {
	t.Helper()
	r := do(t, e.ts, http.MethodPut, computeBase+"/os-quota-class-sets/default", adminToken, `{"quota_class_set": `+body+`}`, nil)
	if r.code != http.StatusOK {
		t.Fatalf("set the default class %s: %s", body, r)
	}
}

// wantError checks a status, the error body's key and its message.
func wantError(t *testing.T, what string, r response, code int, key, msg string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: %s, want %d", what, r, code)
	}
	if k, m := errorMessage(t, r); k != key || m != msg {
		t.Fatalf("%s: %s %q, want %s %q", what, k, m, key, msg)
	}
}

// A project's servers are held to its instances quota at create, with
// Nova's 403; /limits and the quota detail show the limit and the use.
func TestQuotaEnforcedAtCreate(t *testing.T) {
	e := cliKeystoneEnv(t)
	setDefaultClass(t, e.env, `{"instances": 2, "cores": 20}`)
	boot := func() response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", memberA,
			`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none"}}`, nil)
	}
	for i := 0; i < 2; i++ {
		if r := boot(); r.code != http.StatusAccepted {
			t.Fatalf("boot %d: %s", i, r)
		}
	}
	before := e.digest()
	wantError(t, "third boot", boot(), http.StatusForbidden, "forbidden",
		"Quota exceeded for instances: Requested 1, but already used 2 of 2 instances")
	if e.digest() != before {
		t.Fatal("a boot over quota changed the state")
	}
	// Another project has its own count.
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", memberB,
		`{"server": {"name": "b", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("demo-b boots: %s", r)
	}
	abs := get(t, do(t, e.ts, http.MethodGet, computeBase+"/limits", memberA, "", nil).json(t), "limits", "absolute").(map[string]any)
	if abs["maxTotalInstances"] != float64(2) || abs["totalInstancesUsed"] != float64(2) || abs["maxTotalCores"] != float64(20) ||
		abs["totalCoresUsed"] != float64(2) || abs["totalRAMUsed"] != float64(2) || abs["maxTotalRAMSize"] != float64(-1) {
		t.Fatalf("demo-a's limits: %v", abs)
	}
	d := do(t, e.ts, http.MethodGet, quotaSets+"demo-a/detail", memberA, "", nil)
	if d.code != http.StatusOK {
		t.Fatalf("detail: %s", d)
	}
	if in := get(t, d.json(t), "quota_set", "instances").(map[string]any); in["in_use"] != float64(2) || in["limit"] != float64(2) || in["reserved"] != float64(0) {
		t.Fatalf("detail instances: %v", in)
	}
	if id := get(t, d.json(t), "quota_set", "id"); id != "demo-a" {
		t.Fatalf("detail id %v", id)
	}
	// The project's own limit replaces the class's.
	if r := do(t, e.ts, http.MethodPut, quotaSets+"demo-a", adminToken, `{"quota_set": {"instances": 3}}`, nil); r.code != http.StatusOK ||
		get(t, r.json(t), "quota_set", "instances") != float64(3) {
		t.Fatalf("raise demo-a's instances: %s", r)
	}
	if r := boot(); r.code != http.StatusAccepted {
		t.Fatalf("boot within the raised quota: %s", r)
	}
}

// Key pairs are counted per user, with Nova's message.
func TestQuotaKeyPairs(t *testing.T) {
	e := cliKeystoneEnv(t)
	setDefaultClass(t, e.env, `{"key_pairs": 1}`)
	create := func(name string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/os-keypairs", memberA, `{"keypair": {"name": "`+name+`", "public_key": "`+testPubKey+`"}}`, nil)
	}
	if r := create("k1"); r.code != http.StatusOK {
		t.Fatalf("first key pair: %s", r)
	}
	wantError(t, "second key pair", create("k2"), http.StatusForbidden, "forbidden", "Quota exceeded, too many key pairs.")
	abs := get(t, do(t, e.ts, http.MethodGet, computeBase+"/limits", memberA, "", nil).json(t), "limits", "absolute").(map[string]any)
	if abs["maxTotalKeypairs"] != float64(1) {
		t.Fatalf("limits: %v", abs)
	}
}

// An admin sets a project's limits; one below what the project uses is
// refused unless forced; delete goes back to the defaults. Members read
// only their own project's, and set none.
func TestQuotaSetUpdateAndDelete(t *testing.T) {
	e := cliKeystoneEnv(t)
	setDefaultClass(t, e.env, `{"instances": 10, "cores": 20}`)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/servers", memberA,
		`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none"}}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	put := func(token, body string) response {
		return do(t, e.ts, http.MethodPut, quotaSets+"demo-a", token, body, nil)
	}
	before := e.digest()
	wantError(t, "below usage", put(adminToken, `{"quota_set": {"instances": 0}}`), http.StatusBadRequest, "badRequest",
		"Quota limit 0 for instances must be greater than or equal to already used and reserved 1.")
	for _, bad := range []string{
		`{"quota_set": {"instances": -2}}`, `{"quota_set": {"instances": "ten"}}`, `{"quota_set": {"instances": 1.5}}`,
		`{"quota_set": {"networks": 1}}`, `{"quota_set": {"force": "maybe"}}`, `{"quota_set": []}`, `{"quota": {}}`,
	} {
		if r := put(adminToken, bad); r.code != http.StatusBadRequest {
			t.Errorf("PUT %s: %s, want 400", bad, r)
		}
	}
	if r := do(t, e.ts, http.MethodPut, quotaSets+"demo-a", adminToken, `{"quota_set": {"floating_ips": 1}}`, mv("2.36")); r.code != http.StatusBadRequest {
		t.Errorf("floating_ips at 2.36: %s, want 400", r)
	}
	if r := put(memberA, `{"quota_set": {"instances": 50}}`); r.code != http.StatusForbidden {
		t.Errorf("a member sets its quota: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused quota update changed the state")
	}
	r := put(adminToken, `{"quota_set": {"instances": "0", "cores": 7, "force": "True"}}`)
	if r.code != http.StatusOK {
		t.Fatalf("forced update: %s", r)
	}
	qs := get(t, r.json(t), "quota_set").(map[string]any)
	if qs["instances"] != float64(0) || qs["cores"] != float64(7) || qs["id"] != nil {
		t.Fatalf("update answer: %v", qs)
	}
	show := func(token, path string) map[string]any {
		t.Helper()
		r := do(t, e.ts, http.MethodGet, quotaSets+path, token, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("GET %s: %s", path, r)
		}
		return get(t, r.json(t), "quota_set").(map[string]any)
	}
	if s := show(memberA, "demo-a"); s["instances"] != float64(0) || s["cores"] != float64(7) || s["id"] != "demo-a" {
		t.Fatalf("show: %v", s)
	}
	if d := show(memberA, "demo-a/defaults"); d["instances"] != float64(10) || d["cores"] != float64(20) {
		t.Fatalf("defaults: %v", d)
	}
	// Quota classes are the cloud's: an admin's or a cluster reader's.
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-quota-class-sets/default", memberA, "", nil); r.code != http.StatusForbidden {
		t.Fatalf("a member reads the default class: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-quota-class-sets/default", readerToken, "", nil); r.code != http.StatusOK {
		t.Fatalf("a reader reads the default class: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, quotaSets+"demo-a", memberB, "", nil); r.code != http.StatusForbidden {
		t.Fatalf("demo-b reads demo-a's quotas: %s", r)
	}
	// A user's limit within the project.
	if r := do(t, e.ts, http.MethodPut, quotaSets+"demo-a?user_id=ann", adminToken, `{"quota_set": {"key_pairs": 5}}`, nil); r.code != http.StatusOK {
		t.Fatalf("user's update: %s", r)
	}
	if s := show(adminToken, "demo-a?user_id=ann"); s["key_pairs"] != float64(5) || s["instances"] != float64(0) {
		t.Fatalf("user's quotas: %v", s)
	}
	if r := do(t, e.ts, http.MethodDelete, quotaSets+"demo-a", memberA, "", nil); r.code != http.StatusForbidden {
		t.Fatalf("a member deletes its quotas: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, quotaSets+"demo-a", adminToken, "", nil); r.code != http.StatusAccepted {
		t.Fatalf("delete: %s", r)
	}
	if s := show(adminToken, "demo-a?user_id=ann"); s["instances"] != float64(10) || s["key_pairs"] != float64(-1) {
		t.Fatalf("after delete: %v", s)
	}
}

// The resources of each view follow Nova's microversions: nova-network's
// go at 2.36 (quota classes: 2.50, which brings the server groups), the
// injected files at 2.57.
func TestQuotaViewsByMicroversion(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		path, key, mv string
		has, lacks    []string
	}{
		{quotaSets + "p", "quota_set", "2.1", []string{"id", "floating_ips", "injected_files", "server_groups", "instances"}, nil},
		{quotaSets + "p", "quota_set", "2.36", []string{"injected_files", "server_group_members"}, []string{"floating_ips", "fixed_ips", "security_groups", "security_group_rules"}},
		{quotaSets + "p/defaults", "quota_set", "2.57", []string{"key_pairs"}, []string{"injected_files", "injected_file_content_bytes", "injected_file_path_bytes"}},
		{computeBase + "/os-quota-class-sets/default", "quota_class_set", "2.1", []string{"id", "floating_ips", "injected_files"}, []string{"server_groups", "server_group_members"}},
		{computeBase + "/os-quota-class-sets/default", "quota_class_set", "2.50", []string{"server_groups", "injected_files"}, []string{"floating_ips", "security_groups"}},
		{computeBase + "/os-quota-class-sets/default", "quota_class_set", "2.57", []string{"server_groups"}, []string{"injected_files"}},
	}
	for _, c := range cases {
		r := do(t, e.ts, http.MethodGet, c.path, adminToken, "", mv(c.mv))
		if r.code != http.StatusOK {
			t.Fatalf("GET %s at %s: %s", c.path, c.mv, r)
		}
		v := get(t, r.json(t), c.key).(map[string]any)
		for _, k := range c.has {
			if _, ok := v[k]; !ok {
				t.Errorf("%s at %s lacks %s: %v", c.path, c.mv, k, v)
			}
		}
		for _, k := range c.lacks {
			if _, ok := v[k]; ok {
				t.Errorf("%s at %s shows %s: %v", c.path, c.mv, k, v)
			}
		}
	}
	// Nova takes a class's server group limits before 2.50 shows them.
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-quota-class-sets/default", adminToken,
		`{"quota_class_set": {"server_groups": 4}}`, mv("2.1")); r.code != http.StatusOK {
		t.Errorf("server_groups of a class at 2.1: %s", r)
	}
	if g := get(t, do(t, e.ts, http.MethodGet, quotaSets+"p/defaults", adminToken, "", nil).json(t), "quota_set", "server_groups"); g != float64(4) {
		t.Errorf("default server_groups %v, want 4", g)
	}
	if r := do(t, e.ts, http.MethodPut, computeBase+"/os-quota-class-sets/default", adminToken,
		`{"quota_class_set": {"floating_ips": 4}}`, mv("2.50")); r.code != http.StatusBadRequest {
		t.Errorf("floating_ips of a class at 2.50: %s", r)
	}
	// At 2.75 an unknown query parameter is refused.
	if r := do(t, e.ts, http.MethodGet, quotaSets+"p?foo=1", adminToken, "", mv("2.75")); r.code != http.StatusBadRequest {
		t.Errorf("unknown query parameter at 2.75: %s", r)
	}
}
