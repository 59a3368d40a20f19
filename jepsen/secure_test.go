package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentConfigINI(t *testing.T) {
	if got := (AgentConfig{}).INI(); got != "" {
		t.Fatalf("empty config = %q, want nothing", got)
	}
	ks := &Keystone{AuthURL: "http://127.0.0.1:5020/v3", ServiceUser: "corral", ServicePassword: "pw", ServiceProject: "service"}
	got := AgentConfig{CA: "/p/ca.pem", Cert: "/p/n1.pem", Key: "/p/n1-key.pem", GossipKey: "KEY=", Keystone: ks, PeerToken: "tok"}.INI()
	for _, want := range []string{
		"[auth]\nstrategy = keystone\npeer_token = tok\n",
		"[gossip]\nencrypt = KEY=\n",
		"[keystone_authtoken]\nauth_url = http://127.0.0.1:5020/v3\n",
		"username = corral\npassword = pw\nproject_name = service\n",
		"[tls]\nca_file = /p/ca.pem\ncert_file = /p/n1.pem\nkey_file = /p/n1-key.pem\nverify_incoming = true\nverify_outgoing = true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "[auth]") > strings.Index(got, "[tls]") {
		t.Errorf("sections not in a fixed order:\n%s", got)
	}
	if gossipOnly := (AgentConfig{GossipKey: "K"}).INI(); strings.Contains(gossipOnly, "[tls]") || strings.Contains(gossipOnly, "[auth]") {
		t.Errorf("gossip-only config has more: %s", gossipOnly)
	}
}

func TestSetGossipKeyRewritesEveryConfig(t *testing.T) {
	dir := t.TempDir()
	cl := &Cluster{Dir: dir, Token: "tok"}
	for _, n := range []string{"n1", "n2"} {
		cl.Agents = append(cl.Agents, &Agent{Name: n, cl: cl})
	}
	if err := cl.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetGossipKey("NEWKEY"); err != nil {
		t.Fatal(err)
	}
	for _, a := range cl.Agents {
		b, err := os.ReadFile(a.ConfPath())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "encrypt = NEWKEY") {
			t.Errorf("%s: %s", a.Name, b)
		}
		if st, _ := os.Stat(a.ConfPath()); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600 (it holds the key)", a.Name, st.Mode())
		}
	}
	if a := cl.Agents[0]; !strings.HasPrefix(a.URL(), "http://") {
		t.Errorf("URL without TLS = %s", a.URL())
	}
	cl.PKI = &PKI{}
	if a := cl.Agents[0]; !strings.HasPrefix(a.URL(), "https://") {
		t.Errorf("URL with TLS = %s", a.URL())
	}
}

const sampleEnv = `OS_AUTH_URL=http://127.0.0.1:5020/v3
# comment
SERVICE_PROJECT=service
CORRAL_SERVICE_USERNAME=corral
CORRAL_SERVICE_PASSWORD=corral-service
ALICE_USERNAME=alice
ALICE_PASSWORD=corral-demo
ALICE_PROJECT=demo-a
`

func TestKeystoneFromEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openstack.env")
	if err := os.WriteFile(path, []byte(sampleEnv), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, skip, err := keystoneFromConfig(Config{OpenStackEnv: path})
	if err != nil || skip != "" {
		t.Fatalf("skip %q err %v", skip, err)
	}
	want := Keystone{AuthURL: "http://127.0.0.1:5020/v3", ServiceUser: "corral", ServicePassword: "corral-service",
		ServiceProject: "service", User: "alice", Password: "corral-demo", Project: "demo-a"}
	if *ks != want {
		t.Fatalf("got %+v\nwant %+v", *ks, want)
	}
	env, _ := ReadEnvFile(path)
	delete(env, "ALICE_PASSWORD")
	if _, err := KeystoneFromEnv(env); err == nil || !strings.Contains(err.Error(), "ALICE_PASSWORD") {
		t.Fatalf("err = %v, want one naming ALICE_PASSWORD", err)
	}
}

func TestKeystoneSkippedWithoutEnv(t *testing.T) {
	for _, p := range []string{"", filepath.Join(t.TempDir(), "missing.env")} {
		ks, skip, err := keystoneFromConfig(Config{OpenStackEnv: p})
		if ks != nil || err != nil || !strings.Contains(skip, "openstack-up.sh") {
			t.Errorf("env %q: ks %v skip %q err %v, want a skip naming openstack-up.sh", p, ks, skip, err)
		}
	}
}

func TestKeystoneToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Auth struct {
				Identity struct {
					Password struct {
						User struct{ Name, Password string }
					}
				}
				Scope struct{ Project struct{ Name string } }
			}
		}
		if r.URL.Path != "/v3/auth/tokens" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		a := body.Auth
		if a.Identity.Password.User.Name != "alice" || a.Identity.Password.User.Password != "pw" || a.Scope.Project.Name != "demo-a" {
			http.Error(w, "The request you have made requires authentication.", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Subject-Token", "gAAAA-token")
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	ks := &Keystone{AuthURL: srv.URL + "/v3", User: "alice", Password: "pw", Project: "demo-a"}
	tok, err := ks.Token(context.Background(), srv.Client())
	if err != nil || tok != "gAAAA-token" {
		t.Fatalf("token %q err %v", tok, err)
	}
	ks.Password = "wrong"
	if _, err := ks.Token(context.Background(), srv.Client()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v, want the 401", err)
	}
}
