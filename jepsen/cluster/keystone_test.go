package cluster

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
	ks, skip, err := KeystoneFromFile(path)
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
		ks, skip, err := KeystoneFromFile(p)
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
