package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/testkit"
)

// TestConfigPeerToken: without TLS the peer token is required, at least
// 16 characters long, and nobody's user token; with TLS it may be unset.
func TestConfigPeerToken(t *testing.T) {
	dir := makePKI(t)
	withTLS := writeConfig(t, tlsINI(dir, caCertFile, "peer1.pem", "peer1-key.pem"))
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "" when valid
	}{
		{"unset", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": ""}, "no peer token: without [tls]"},
		{"short", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": "peer-tok-1234"}, "[auth] peer_token \"pee…\" is too short: use at least 16 characters"},
		{"an admin token", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": "admin-token-0123456789", "CORRAL_AUTH_ADMIN_TOKENS": "admin-token-0123456789"}, "also a user's token"},
		{"a reader token", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": "reader-token-0123456789", "CORRAL_AUTH_READER_TOKENS": "reader-token-0123456789"}, "also a user's token"},
		{"CORRAL_ADMIN_TOKEN", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": "admin-token-0123456789", "CORRAL_ADMIN_TOKEN": "admin-token-0123456789"}, "also a user's token"},
		{"set", nil, map[string]string{"CORRAL_AUTH_PEER_TOKEN": "peer-token-0123456789"}, ""},
		{"unset with TLS", []string{"--name", "peer1", "--config", withTLS}, map[string]string{"CORRAL_AUTH_PEER_TOKEN": ""}, ""},
		{"another peer's certificate", []string{"--name", "peer2", "--config", withTLS}, map[string]string{"CORRAL_AUTH_PEER_TOKEN": ""}, "is the certificate of peer \"peer1\", not of this agent \"peer2\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"CORRAL_NAME": "n", "CORRAL_ADMIN_TOKEN": goodToken}
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := load(t, tc.args, env)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestAgentPeerTokenIsNoUserCredential: an agent takes the peer token on
// the peers' endpoints only, and an admin token nowhere there.
func TestAgentPeerTokenIsNoUserCredential(t *testing.T) {
	const admin, peer = "admin-token-agent-1", "peer-token-agent-0123456"
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "solo", t.TempDir(), "127.0.0.1", 1
	cfg.AdminTokens, cfg.PeerToken = []string{admin}, peer
	if _, err := startTestAgent(t, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	base := "http://" + cfg.apiAddr()
	get := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-Auth-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testkit.Eventually(t, 30*time.Second, testkit.Holds("the agent's leader answers read-index to the peer token", func() bool {
		return get(api.ReadIndexPath, peer) == http.StatusOK
	}))
	if code := get("/v1/hosts", admin); code != http.StatusOK {
		t.Fatalf("the admin token on the public API: %d", code)
	}
	if code := get("/v1/hosts", peer); code != http.StatusUnauthorized {
		t.Errorf("the peer token on the public API: %d, want 401", code)
	}
	if code := get(api.ReadIndexPath, admin); code != http.StatusForbidden {
		t.Errorf("the admin token on the peers' read-index: %d, want 403", code)
	}
}
