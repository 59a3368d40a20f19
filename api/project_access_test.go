package api_test

import (
	"net/http"
	"testing"
	"time"
)

// Keystone callers of the features the openstack CLI uses: private
// flavors, per-user key pairs and locked servers.
const (
	memberA = "gAAAAA-cli-member-demo-a"
	memberB = "gAAAAA-cli-member-demo-b"
)

func cliKeystoneEnv(t *testing.T) *keystoneEnv {
	t.Helper()
	e := newKeystoneEnv(t, time.Minute)
	e.ks.issue(memberA, "ann", "demo-a", "member", "reader")
	e.ks.issue(memberB, "ben", "demo-b", "member", "reader")
	createFlavor(t, e.env, `{"flavor": {"name": "pub", "id": "pub", "ram": 1, "vcpus": 1, "disk": 1}}`)
	createFlavor(t, e.env, `{"flavor": {"name": "priv", "id": "priv", "ram": 1, "vcpus": 1, "disk": 1, "os-flavor-access:is_public": false}}`)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/flavors/priv/action", adminToken, `{"addTenantAccess": {"tenant": "demo-a"}}`, nil); r.code != http.StatusOK {
		t.Fatalf("add access: %s", r)
	}
	return e
}

func TestPrivateFlavorsPerProject(t *testing.T) {
	e := cliKeystoneEnv(t)
	count := func(token string) int {
		return len(get(t, do(t, e.ts, http.MethodGet, computeBase+"/flavors", token, "", nil).json(t), "flavors").([]any))
	}
	if a, b := count(memberA), count(memberB); a != 2 || b != 1 {
		t.Fatalf("demo-a sees %d flavors, demo-b %d; want 2 and 1", a, b)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/flavors/priv", memberB, "", nil); r.code != http.StatusNotFound {
		t.Fatalf("demo-b shows the private flavor: %s", r)
	}
	boot := func(token, flavor string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "`+flavor+`", "networks": "none"}}`, nil)
	}
	before := e.digest()
	if r := boot(memberB, "priv"); r.code != http.StatusBadRequest {
		t.Fatalf("demo-b boots with a private flavor of demo-a: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a refused boot changed the state")
	}
	if r := boot(memberA, "priv"); r.code != http.StatusAccepted {
		t.Fatalf("demo-a boots with its private flavor: %s", r)
	}
}

func TestKeyPairsAreEachUsers(t *testing.T) {
	e := cliKeystoneEnv(t)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/os-keypairs", memberA, `{"keypair": {"name": "k", "public_key": "`+testPubKey+`"}}`, nil); r.code != http.StatusOK {
		t.Fatalf("ann imports: %s", r)
	}
	if n := len(get(t, do(t, e.ts, http.MethodGet, computeBase+"/os-keypairs", memberB, "", nil).json(t), "keypairs").([]any)); n != 0 {
		t.Fatalf("ben sees %d of ann's key pairs", n)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-keypairs/k?user_id=ann-id", memberB, "", mv("2.10")); r.code != http.StatusForbidden {
		t.Fatalf("ben reads ann's key pair: %s", r)
	}
	if r := do(t, e.ts, http.MethodGet, computeBase+"/os-keypairs/k?user_id=ann-id", adminToken, "", mv("2.10")); r.code != http.StatusOK {
		t.Fatalf("an admin reads ann's key pair: %s", r)
	}
	boot := func(token string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none", "key_name": "k"}}`, nil)
	}
	if r := boot(memberB); r.code != http.StatusBadRequest {
		t.Fatalf("ben boots with ann's key: %s", r)
	}
	if r := boot(memberA); r.code != http.StatusAccepted {
		t.Fatalf("ann boots with her key: %s", r)
	}
}

func TestLockedServerRefusesItsProject(t *testing.T) {
	e := cliKeystoneEnv(t)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", memberA,
		`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "pub", "networks": "none"}}`, nil)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	id := get(t, r.json(t), "server", "id").(string)
	path := computeBase + "/servers/" + id
	if r := do(t, e.ts, http.MethodPost, path+"/action", adminToken, `{"lock": null}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("lock: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, path, memberA, `{"server": {"name": "b"}}`, nil); r.code != http.StatusConflict {
		t.Fatalf("rename of a locked server by its project: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, path, memberA, "", nil); r.code != http.StatusConflict {
		t.Fatalf("delete of a locked server by its project: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, path+"/action", memberB, `{"unlock": null}`, nil); r.code != http.StatusNotFound {
		t.Fatalf("another project unlocks: %s", r)
	}
	if r := do(t, e.ts, http.MethodPost, path+"/action", adminToken, `{"unlock": null}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("unlock: %s", r)
	}
	if r := do(t, e.ts, http.MethodPut, path, memberA, `{"server": {"name": "b"}}`, nil); r.code != http.StatusOK {
		t.Fatalf("rename after unlock: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, path, memberA, "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete after unlock: %s", r)
	}
}
