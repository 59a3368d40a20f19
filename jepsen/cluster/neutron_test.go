package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

const sampleNeutronEnv = `NEUTRON_URL=http://127.0.0.1:9696
NEUTRON_AUTH=keystone
NEUTRON_KEYSTONE_URL=http://127.0.0.1:5020/v3
NEUTRON_REGION=RegionOne
NEUTRON_PROVIDER_NETWORK=provider
NEUTRON_PROVIDER_NETWORK_ID=6996dfb1-c971-4af6-b1ea-44522fb41955
`

func sampleKeystone() *Keystone {
	return &Keystone{AuthURL: "http://127.0.0.1:5020/v3", ServiceUser: "corral", ServicePassword: "corral-service",
		ServiceProject: "service", User: "alice", Password: "pw", Project: "demo-a", AdminUser: "admin", AdminPassword: "apw", AdminProject: "admin"}
}

func TestNeutronFromEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "neutron.env")
	if err := os.WriteFile(path, []byte(sampleNeutronEnv), 0o600); err != nil {
		t.Fatal(err)
	}
	ks := sampleKeystone()
	nt, skip, err := NeutronFromFile(path, ks)
	if err != nil || skip != "" {
		t.Fatalf("skip %q err %v", skip, err)
	}
	if nt.URL != "http://127.0.0.1:9696" || nt.Network != "provider" || nt.NetworkID != "6996dfb1-c971-4af6-b1ea-44522fb41955" ||
		nt.Region != "RegionOne" || nt.Keystone != ks {
		t.Fatalf("got %+v", nt)
	}
	env, _ := ReadEnvFile(path)
	delete(env, "NEUTRON_PROVIDER_NETWORK_ID")
	if _, err := NeutronFromEnv(env, ks); err == nil || !strings.Contains(err.Error(), "NEUTRON_PROVIDER_NETWORK_ID") {
		t.Fatalf("err = %v, want one naming NEUTRON_PROVIDER_NETWORK_ID", err)
	}
	env, _ = ReadEnvFile(path)
	env["NEUTRON_KEYSTONE_URL"] = "http://127.0.0.1:25000/v3"
	if _, err := NeutronFromEnv(env, ks); err == nil || !strings.Contains(err.Error(), "25000") {
		t.Fatalf("err = %v, want one naming the other Keystone", err)
	}
	env, _ = ReadEnvFile(path)
	env["NEUTRON_AUTH"] = "noauth"
	if _, err := NeutronFromEnv(env, ks); err == nil || !strings.Contains(err.Error(), "noauth") {
		t.Fatalf("err = %v, want one naming noauth", err)
	}
	noAdmin := *ks
	noAdmin.AdminPassword = ""
	env, _ = ReadEnvFile(path)
	if _, err := NeutronFromEnv(env, &noAdmin); err == nil || !strings.Contains(err.Error(), "OS_PASSWORD") {
		t.Fatalf("err = %v, want one naming OS_PASSWORD", err)
	}
}

// Without its env file, or without the Keystone of -keystone, -neutron is
// skipped with a reason; the run goes on.
func TestNeutronSkippedWithoutEnv(t *testing.T) {
	for _, p := range []string{"", filepath.Join(t.TempDir(), "missing.env")} {
		nt, skip, err := NeutronFromFile(p, sampleKeystone())
		if nt != nil || err != nil || !strings.Contains(skip, "neutron-up.sh") {
			t.Errorf("env %q: nt %v skip %q err %v, want a skip naming neutron-up.sh", p, nt, skip, err)
		}
	}
	if nt, skip, err := NeutronFromFile("/any", nil); nt != nil || err != nil || !strings.Contains(skip, "-keystone") {
		t.Errorf("no Keystone: nt %v skip %q err %v, want a skip naming -keystone", nt, skip, err)
	}
}

// The agents' [neutron] is corral's service user of the Keystone, with
// the endpoint from the catalog, in a file of its own section.
func TestAgentConfigNeutron(t *testing.T) {
	nt := &Neutron{URL: "http://127.0.0.1:9696", Region: "RegionOne", Keystone: sampleKeystone()}
	got := AgentConfig{Keystone: nt.Keystone, PeerToken: "tok", Neutron: nt.AgentSection(time.Minute)}.INI()
	want := "[neutron]\nauth_type = password\nauth_url = http://127.0.0.1:5020/v3\nusername = corral\npassword = corral-service\n" +
		"project_name = service\nuser_domain_name = Default\nproject_domain_name = Default\nregion_name = RegionOne\nvalid_interfaces = public\n"
	want += "port_reap_grace = 1m0s\nport_reap_interval = 5s\n"
	if !strings.Contains(got, want) {
		t.Fatalf("config lacks\n%s\ngot:\n%s", want, got)
	}
	if strings.Contains(got, "apw") || strings.Contains(got, "alice") {
		t.Fatalf("the admin's or the user's credentials reached an agent:\n%s", got)
	}
	if plain := (AgentConfig{Keystone: nt.Keystone, PeerToken: "tok"}).INI(); strings.Contains(plain, "[neutron]") {
		t.Fatalf("[neutron] without -neutron:\n%s", plain)
	}
}

// fakeNeutron serves GET /v2.0/ports (network_id filter) with ports,
// and takes only the token tok-2 (the first one issued is refused).
func fakeNeutron(t *testing.T, ports func() []client.NeutronPort) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Auth-Token") != "tok-2" {
			http.Error(w, `{"error": "expired"}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v2.0/ports" || r.URL.Query().Get("network_id") != "net" {
			http.NotFound(w, r)
			return
		}
		ps := ports()
		if ps == nil {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ports": ps})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The run's ports: those of its servers, the user's, and the user
// project's made since the start with a device; a 401 renews the token.
// AwaitReaped waits while an orphan stays, and not at all once it is gone.
func TestNeutronRunPortsAndReaperWait(t *testing.T) {
	since := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	var reads atomic.Int32
	ports := func() []client.NeutronPort {
		// The reaper, in another process, deletes the orphan once the
		// suite has read it three times.
		reaped := reads.Add(1) > 3
		if reads.Load() == 2 {
			return nil // the server below answers 503
		}
		out := []client.NeutronPort{
			{ID: "p-live", DeviceID: "s-live", ProjectID: "proj", CreatedAt: "2026-12-01T17:00:03Z"},
			{ID: "p-user", ProjectID: "proj", CreatedAt: "2026-12-01T16:59:59Z"},
			{ID: "p-new-foreign", DeviceID: "vm-1", ProjectID: "proj", CreatedAt: "2026-12-01T17:00:00Z"},
			{ID: "p-old-foreign", DeviceID: "vm-2", ProjectID: "proj", CreatedAt: "2026-12-01T16:00:00Z"},
			{ID: "p-other-project", DeviceID: "vm-3", ProjectID: "other", CreatedAt: "2026-12-01T17:00:09Z"},
		}
		if !reaped {
			out = append(out, client.NeutronPort{ID: "p-orphan", DeviceID: "s-gone", ProjectID: "proj", CreatedAt: "2026-12-01T17:00:04Z"})
		}
		return out
	}
	srv := fakeNeutron(t, ports)
	var n atomic.Int32
	admin := &client.Neutron{URL: srv.URL, HTTP: srv.Client(), Auth: func(context.Context) (string, error) {
		return "tok-" + string(rune('0'+n.Add(1))), nil
	}}
	nr := &NeutronRun{NT: &Neutron{URL: srv.URL, NetworkID: "net", Network: "provider"}, Admin: admin, ProjectID: "proj",
		Since: since, UserPorts: []string{"p-user"}, Grace: 0}
	known := history.Set([]string{"s-live", "s-gone"})
	got, err := nr.ports(context.Background(), known)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, " ") != "p-live p-user p-new-foreign p-orphan" {
		t.Fatalf("run's ports %v", ids)
	}
	if n.Load() != 2 {
		t.Fatalf("tokens issued %d, want 2 (one renewed after the 401)", n.Load())
	}
	fs := history.FinalState{Servers: []history.ServerState{{ID: "s-live", Status: "ACTIVE"}, {ID: "s-gone", Status: "DELETED"}}}
	// The first read of the wait is refused (503): the orphans are
	// counted at the first read Neutron answers.
	rw := nr.AwaitReaped(context.Background(), fs, known)
	if rw.OrphansBefore != 1 || reads.Load() != 4 || rw.WaitS != NeutronReapSlack.Seconds() {
		t.Fatalf("reap wait %+v after %d reads: want one orphan, read until it went", rw, reads.Load())
	}
	rw = nr.AwaitReaped(context.Background(), fs, known)
	if rw.OrphansBefore != 0 || reads.Load() != 5 {
		t.Fatalf("reap wait without orphans %+v after %d reads: want one read", rw, reads.Load())
	}
	// An orphan that stays is waited for until the deadline, no longer.
	reads.Store(-1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nr.Grace = -NeutronReapSlack + 1500*time.Millisecond
	if rw := nr.AwaitReaped(ctx, fs, known); rw.OrphansBefore != 1 || ctx.Err() != nil {
		t.Fatalf("reap wait with an orphan that stays: %+v (ctx %v)", rw, ctx.Err())
	}
	ns := &history.NeutronState{Ports: got, KnownServers: []string{"s-live", "s-gone"}, UserPorts: []string{"p-user"}}
	if rp := strings.Join(RunPorts(ns), " "); rp != "p-user p-live p-orphan" {
		t.Fatalf("ports removed at the end: %s (never another client's)", rp)
	}
}

// -neutron stops the run before the agents start when the network of the
// env file is not there or not shared; a shared one is the boots'.
func TestSecureNeutronChecksTheNetwork(t *testing.T) {
	ks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Subject-Token", "admin-token")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token": {"project": {"id": "p-admin"}}}`))
	}))
	defer ks.Close()
	nets := map[string]bool{"shared-net": true, "private-net": false}
	nt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/v2.0/networks/")
		shared, ok := nets[id]
		if r.Header.Get("X-Auth-Token") != "admin-token" || !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"network": map[string]any{"id": id, "name": "net-" + id, "shared": shared}})
	}))
	defer nt.Close()
	dir := t.TempDir()
	for id, want := range map[string]string{"shared-net": "", "private-net": "not shared", "missing-net": "not found"} {
		env := filepath.Join(dir, id+".env")
		body := "NEUTRON_URL=" + nt.URL + "\nNEUTRON_PROVIDER_NETWORK=provider\nNEUTRON_PROVIDER_NETWORK_ID=" + id + "\n"
		if err := os.WriteFile(env, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		k := sampleKeystone()
		k.AuthURL = ks.URL + "/v3"
		sec := Security{Keystone: k}
		err := sec.neutron(context.Background(), SecureOptions{Neutron: true, NeutronEnv: env, Logf: t.Logf})
		switch {
		case want == "" && (err != nil || sec.Neutron == nil || sec.Neutron.Network != "net-shared-net"):
			t.Errorf("%s: err %v, neutron %+v", id, err, sec.Neutron)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || sec.Neutron != nil):
			t.Errorf("%s: err %v, want one saying %q", id, err, want)
		}
	}
}
