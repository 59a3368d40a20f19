package main

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/reaper"
	"github.com/corral-dev/corral/testkit"
)

// TestConfigPortReaper: [neutron] port_reap_interval and port_reap_grace
// are read and checked: off turns the reaper off, a grace under a minute
// or shorter than the interval is refused, and neither is taken without
// Neutron.
func TestConfigPortReaper(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n", "CORRAL_AUTH_PEER_TOKEN": "peer-secret-0123456"}
	const nt = "[neutron]\nauth_type = none\nendpoint_override = http://127.0.0.1:9696\n"
	if c := mustLoad(t, []string{"--config", writeConfig(t, nt)}, env); c.NeutronReap != (neutronReapConfig{}) {
		t.Errorf("defaults %+v, want zero (the reaper's own defaults)", c.NeutronReap)
	}
	c := mustLoad(t, []string{"--config", writeConfig(t, nt+"port_reap_interval = 30s\nport_reap_grace = 5m\n")}, env)
	if c.NeutronReap != (neutronReapConfig{Interval: 30 * time.Second, Grace: 5 * time.Minute}) {
		t.Errorf("[neutron] reaper options %+v", c.NeutronReap)
	}
	if c := mustLoad(t, []string{"--config", writeConfig(t, nt+"port_reap_grace = off\n")}, env); c.NeutronReap.Grace >= 0 {
		t.Errorf("port_reap_grace = off gave %v, want negative (never)", c.NeutronReap.Grace)
	}
	env["CORRAL_NEUTRON_PORT_REAP_GRACE"] = "20m"
	if c := mustLoad(t, []string{"--config", writeConfig(t, nt)}, env); c.NeutronReap.Grace != 20*time.Minute {
		t.Errorf("port_reap_grace from the environment: %v", c.NeutronReap.Grace)
	}
	delete(env, "CORRAL_NEUTRON_PORT_REAP_GRACE")
	for _, tc := range []struct{ ini, want string }{
		{nt + "port_reap_grace = 30s\n", "[neutron] port_reap_grace 30s is shorter than 1m0s"},
		{nt + "port_reap_interval = 20m\n", "[neutron] port_reap_interval 20m0s is longer than port_reap_grace 10m0s"},
		{nt + "port_reap_interval = 2m\nport_reap_grace = 1m\n", "is longer than port_reap_grace"},
		{nt + "port_reap_grace = soon\n", `"soon" is not a duration`},
		{nt + "port_reap_interval = 0s\n", "must be positive"},
		{"[neutron]\nport_reap_grace = 1h\n", "port_reap_grace need Neutron"},
	} {
		_, err := load(t, []string{"--config", writeConfig(t, tc.ini)}, env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.ini, err, tc.want)
		}
	}
}

// TestPortReaperOnlyWithNeutron: no reaper without [neutron] or with
// port_reap_grace = off; otherwise one with its metrics on the agent's
// registry.
func TestPortReaperOnlyWithNeutron(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	nc, err := neutron.New(neutron.Options{AuthType: "none", EndpointOverride: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := portReaper(neutronReapConfig{}, nil, nil, prometheus.NewRegistry(), log); r != nil || err != nil {
		t.Errorf("without [neutron]: %v, %v", r, err)
	}
	if r, err := portReaper(neutronReapConfig{Grace: -1}, nil, nc, prometheus.NewRegistry(), log); r != nil || err != nil {
		t.Errorf("port_reap_grace = off: %v, %v", r, err)
	}
	reg := prometheus.NewRegistry()
	if r, err := portReaper(neutronReapConfig{}, leaderless{}, nc, reg, log); r == nil || err != nil {
		t.Fatalf("with [neutron]: %v, %v", r, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		found = found || f.GetName() == "corral_neutron_ports_orphaned"
	}
	if !found {
		t.Error("the reaper's metrics are not on the agent's registry")
	}
}

type leaderless struct{ reaper.Cluster }

// TestAgentRunsThePortReaper: an agent with [neutron] that leads lists
// Neutron's ports marked as corral's.
func TestAgentRunsThePortReaper(t *testing.T) {
	var mu sync.Mutex
	var listed []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v2.0/networks":
			_, _ = w.Write([]byte(`{"networks": []}`))
		case "/v2.0/ports":
			mu.Lock()
			listed = append(listed, r.URL.RawQuery)
			mu.Unlock()
			_, _ = w.Write([]byte(`{"ports": []}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer fake.Close()
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "solo", t.TempDir(), "127.0.0.1", 1
	cfg.AdminTokens, cfg.PeerToken = []string{goodToken}, "peer-token-agent-0123456"
	cfg.Neutron = neutron.Options{AuthType: "none", EndpointOverride: fake.URL}
	cfg.NeutronReap = neutronReapConfig{Interval: 50 * time.Millisecond, Grace: time.Minute}
	if _, err := startTestAgent(t, &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, q := range listed {
			if q == "description=corral" {
				return nil
			}
		}
		return errors.New("the leader has not listed the ports marked as corral's yet")
	})
}
