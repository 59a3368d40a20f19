package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral-dev/corral/neutron"
)

// TestConfigNeutron: [neutron] takes Nova's option names (file and
// environment), and a set [neutron] is validated, naming what is missing.
func TestConfigNeutron(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n", "CORRAL_AUTH_PEER_TOKEN": "peer-secret-0123456",
		"CORRAL_NEUTRON_PASSWORD": "from-env"}
	c := mustLoad(t, []string{"--config", writeConfig(t, `[neutron]
auth_type = password
auth_url = http://127.0.0.1:5000/v3
username = corral
password = in-file
project_name = service
user_domain_name = Users
project_domain_name = Projects
region_name = RegionOne
valid_interfaces = public
`)}, env)
	want := neutron.Options{AuthType: "password", AuthURL: "http://127.0.0.1:5000/v3", Username: "corral", Password: "from-env",
		ProjectName: "service", UserDomainName: "Users", ProjectDomainName: "Projects", RegionName: "RegionOne",
		ValidInterfaces: "public"}
	if c.Neutron != want {
		t.Errorf("[neutron] = %+v, want %+v", c.Neutron, want)
	}
	if plain := mustLoad(t, nil, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n",
		"CORRAL_AUTH_PEER_TOKEN": "peer-secret-0123456"}); plain.Neutron.Enabled() {
		t.Errorf("no [neutron] but enabled: %+v", plain.Neutron)
	} else if c, err := (&agent{cfg: plain}).checkNeutron(); err != nil || c != nil {
		t.Errorf("checkNeutron without [neutron] = %v, %v; want no client", c, err)
	}
	delete(env, "CORRAL_NEUTRON_PASSWORD")
	for _, tc := range []struct{ ini, want string }{
		{"[neutron]\nendpoint_override = http://127.0.0.1:9696\n", "[neutron] auth_type is required"},
		{"[neutron]\nauth_type = none\n", "[neutron] endpoint_override is required"},
		{"[neutron]\nauth_type = token\nendpoint_override = http://127.0.0.1:9696\n", `[neutron] auth_type "token" is not password or none`},
		{"[neutron]\nauth_type = password\n", "[neutron] project_name is required"},
		{"[neutron]\nauth_type = password\nauth_url = k:5000\nusername = u\npassword = p\nproject_name = s\n", "[neutron] auth_url"},
		{"[neutron]\nauth_type = none\nendpoint_override = http://n:9696\nurl = http://n:9696\n", "unknown option [neutron] url"},
	} {
		_, err := load(t, []string{"--config", writeConfig(t, tc.ini)}, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.ini, err, tc.want)
		}
	}
}

// TestCheckNeutronAtStart: with [neutron] set, start fails when Neutron
// cannot be reached or the credentials are refused, and goes on when it answers.
func TestCheckNeutronAtStart(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2.0/networks" && r.Header.Get("X-Auth-Token") == "":
			_, _ = w.Write([]byte(`{"networks": []}`))
		case r.URL.Path == "/v3/auth/tokens":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": {"code": 401, "message": "The request you have made requires authentication."}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	log := slog.New(slog.DiscardHandler)
	check := func(o neutron.Options) error {
		c, err := (&agent{cfg: agentConfig{Neutron: o}, log: log}).checkNeutron()
		if err == nil && c == nil {
			return errors.New("no client")
		}
		return err
	}

	if err := check(neutron.Options{AuthType: "none", EndpointOverride: up.URL}); err != nil {
		t.Errorf("a Neutron that answers: %v", err)
	}
	err = check(neutron.Options{AuthType: "none", EndpointOverride: dead})
	if !errors.Is(err, neutron.ErrUnavailable) || !strings.Contains(err.Error(), "[neutron]") || !strings.Contains(err.Error(), dead) {
		t.Errorf("a Neutron not there: %v", err)
	}
	err = check(neutron.Options{AuthType: "password", AuthURL: up.URL + "/v3", Username: "corral", Password: "wrong", ProjectName: "service"})
	if !errors.Is(err, neutron.ErrUnauthorized) || !strings.Contains(err.Error(), "check [neutron] username, password") {
		t.Errorf("refused credentials: %v", err)
	}
}

// TestAgentStartStopsOnNeutron: an agent whose [neutron] does not answer
// does not start, and says why.
func TestAgentStartStopsOnNeutron(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind = "solo", t.TempDir(), "127.0.0.1"
	cfg.AdminTokens, cfg.PeerToken = []string{goodToken}, "peer-token-agent-0123456"
	cfg.Neutron = neutron.Options{AuthType: "none", EndpointOverride: dead}
	_, err = startTestAgent(t, &cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("the agent started with a Neutron that does not answer")
	}
	if !errors.Is(err, neutron.ErrUnavailable) || !strings.Contains(err.Error(), "[neutron]") {
		t.Fatalf("start: %v", err)
	}
	again, err := net.Listen("tcp", cfg.apiAddr())
	if err != nil {
		t.Fatalf("the failed start kept the API port: %v", err)
	}
	_ = again.Close()
}
