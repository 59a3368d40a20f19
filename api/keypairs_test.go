package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

const (
	testPubKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID2S6HUhRL4srmCu+1n4Z7ODHe0isDXOR3Z2Gaq508qn test@corral"
	testFingerprint = "42:80:77:5c:38:00:d4:34:b8:d9:18:e0:84:76:75:fc" // ssh-keygen -l -E md5
)

func TestKeyPairImportListShowDelete(t *testing.T) {
	e := newEnv(t)
	kp := computeBase + "/os-keypairs"
	r := do(t, e.ts, http.MethodPost, kp, adminToken, `{"keypair": {"name": "laptop", "public_key": "`+testPubKey+`"}}`, mv("2.2"))
	if r.code != http.StatusCreated {
		t.Fatalf("import: %s", r)
	}
	v := r.json(t)
	if get(t, v, "keypair", "fingerprint") != testFingerprint || get(t, v, "keypair", "type") != "ssh" ||
		get(t, v, "keypair", "user_id") != "admin" {
		t.Fatalf("import answered %s", r.body)
	}
	if _, has := get(t, v, "keypair").(map[string]any)["private_key"]; has {
		t.Fatal("an imported key pair has no private key to answer")
	}
	if r := do(t, e.ts, http.MethodPost, kp, adminToken, `{"keypair": {"name": "laptop", "public_key": "`+testPubKey+`"}}`, nil); r.code != http.StatusConflict {
		t.Fatalf("duplicate: %s", r)
	}
	before := e.digest()
	for _, bad := range []string{
		`{"keypair": {"name": "bad/name", "public_key": "` + testPubKey + `"}}`,
		`{"keypair": {"name": "k", "public_key": "not a key"}}`,
		`{"keypair": {"name": "k", "type": "gpg"}}`,
		`{"keypair": {}}`,
	} {
		if r := do(t, e.ts, http.MethodPost, kp, adminToken, bad, mv("2.2")); r.code != http.StatusBadRequest {
			t.Errorf("POST %s: %s", bad, r)
		}
	}
	if r := do(t, e.ts, http.MethodPost, kp, adminToken, `{"keypair": {"name": "k", "type": "ssh"}}`, nil); r.code != http.StatusBadRequest {
		t.Errorf("type below 2.2: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused key pairs changed the state")
	}

	l := do(t, e.ts, http.MethodGet, kp, readerToken, "", mv("2.2")).json(t)
	if get(t, l, "keypairs", 0, "keypair", "name") != "laptop" || get(t, l, "keypairs", 0, "keypair", "public_key") != testPubKey {
		t.Fatalf("list: %v", l)
	}
	s := do(t, e.ts, http.MethodGet, kp+"/laptop", readerToken, "", mv("2.2"))
	if s.code != http.StatusOK || get(t, s.json(t), "keypair", "deleted") != false || get(t, s.json(t), "keypair", "user_id") != "admin" {
		t.Fatalf("show: %s", s)
	}
	if r := do(t, e.ts, http.MethodGet, kp+"/nope", readerToken, "", nil); r.code != http.StatusNotFound {
		t.Fatalf("show unknown: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, kp+"/laptop", adminToken, "", mv("2.2")); r.code != http.StatusNoContent {
		t.Fatalf("delete: %s", r)
	}
	if r := do(t, e.ts, http.MethodDelete, kp+"/laptop", adminToken, "", nil); r.code != http.StatusNotFound {
		t.Fatalf("delete again: %s", r)
	}
}

func TestKeyPairGenerated(t *testing.T) {
	e := newEnv(t)
	r := do(t, e.ts, http.MethodPost, computeBase+"/os-keypairs", adminToken, `{"keypair": {"name": "gen"}}`, nil)
	if r.code != http.StatusOK {
		t.Fatalf("generate below 2.2: %s", r)
	}
	var body struct {
		KeyPair struct {
			PublicKey   string `json:"public_key"`
			PrivateKey  string `json:"private_key"`
			Fingerprint string `json:"fingerprint"`
		} `json:"keypair"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey([]byte(body.KeyPair.PrivateKey))
	if err != nil {
		t.Fatalf("the private key does not parse: %v", err)
	}
	if got := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))); !strings.HasPrefix(body.KeyPair.PublicKey, got) {
		t.Fatalf("the private key does not match the public one:\n%s\n%s", got, body.KeyPair.PublicKey)
	}
	if ssh.FingerprintLegacyMD5(signer.PublicKey()) != body.KeyPair.Fingerprint {
		t.Fatalf("fingerprint %s", body.KeyPair.Fingerprint)
	}
	k, err := e.peer.Node.Store().KeyPair("admin", "gen")
	if err != nil || k.PublicKey != body.KeyPair.PublicKey || strings.Contains(string(e.digest()), "PRIVATE") {
		t.Fatalf("stored pair %+v, %v", k, err)
	}
}

func TestBootWithKeyNameAndUserData(t *testing.T) {
	e := newEnv(t)
	createFlavor(t, e, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	if r := do(t, e.ts, http.MethodPost, computeBase+"/os-keypairs", adminToken, `{"keypair": {"name": "laptop", "public_key": "`+testPubKey+`"}}`, nil); r.code != http.StatusOK {
		t.Fatalf("import: %s", r)
	}
	boot := func(extra string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
			`{"server": {"name": "a", "imageRef": "http://img/a", "flavorRef": "f"`+extra+`}}`, nil)
	}
	before := e.digest()
	if r := boot(`, "key_name": "desktop"`); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "key_name") {
		t.Fatalf("unknown key name: %s", r)
	}
	if r := boot(`, "user_data": "not base64!"`); r.code != http.StatusBadRequest {
		t.Fatalf("bad user data: %s", r)
	}
	if e.digest() != before {
		t.Fatal("refused boots changed the state")
	}
	r := boot(`, "key_name": "laptop", "user_data": "I2Nsb3VkLWNvbmZpZw==", "metadata": {"role": "db"}`)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot: %s", r)
	}
	id := get(t, r.json(t), "server", "id").(string)
	s, err := e.peer.Node.Store().Server(id)
	if err != nil || s.KeyName != "laptop" || s.KeyData != testPubKey || s.UserData != "I2Nsb3VkLWNvbmZpZw==" {
		t.Fatalf("server %+v, %v", s, err)
	}
	if got := get(t, do(t, e.ts, http.MethodGet, computeBase+"/servers/"+id, adminToken, "", nil).json(t), "server", "key_name"); got != "laptop" {
		t.Fatalf("key_name shown %v", got)
	}
}
