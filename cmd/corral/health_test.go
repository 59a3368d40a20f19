package main

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthAsksTheConfiguredAgent: `corral health` finds the agent from
// the configuration file and the environment, as the agent does, asks
// /healthz or /readyz, and exits 1 on anything but 200.
func TestHealthAsksTheConfiguredAgent(t *testing.T) {
	ready := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			_, _ = w.Write([]byte("ok"))
		case r.URL.Path == "/readyz" && ready:
			_, _ = w.Write([]byte("[+]raft ok"))
		default:
			http.Error(w, "[-]raft: no leader", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	conf := filepath.Join(t.TempDir(), "corral.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\nbind = 10.255.255.1\n[api]\nport = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The environment overrides the file, as for the agent.
	t.Setenv("CORRAL_BIND", host)
	t.Setenv("CORRAL_API_PORT", port)
	out, err := runCLI(t, "health", "--config", conf)
	if err != nil || !strings.Contains(out, "/healthz: 200") {
		t.Fatalf("health: %v %q", err, out)
	}
	_, err = runCLI(t, "health", "--config", conf, "--ready")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "no leader") {
		t.Fatalf("health --ready while not ready: %v", err)
	}
	ready = true
	if out, err := runCLI(t, "health", "--config", conf, "--ready"); err != nil || !strings.Contains(out, "/readyz: 200") {
		t.Fatalf("health --ready: %v %q", err, out)
	}
	srv.Close()
	if _, err := runCLI(t, "health", "--config", conf); !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("health of a stopped agent: %v", err)
	}
}
