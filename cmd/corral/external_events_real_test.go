package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/proc"
)

// readEnvFile reads KEY=VALUE lines.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestRealNeutronDeliversExternalEvents: a real Neutron with
// notify_nova_on_port_* on (scripts/neutron-up.sh NEUTRON_NOTIFY_NOVA=1;
// its env file in NEUTRON_NOTIFY_ENV) posts its port events to the
// compute endpoint of Keystone's catalog, as it does for Nova. A corral
// agent serving its Keystone-protected API there, with that Neutron as
// [neutron] and a simulated Ironic, boots a user's server on the provider
// network: the binding of the server's port makes Neutron send
// network-changed with its service user's token, the agent accepts it,
// and the user sees it among the events of the server's create in
// os-instance-actions.
func TestRealNeutronDeliversExternalEvents(t *testing.T) {
	nf := os.Getenv("NEUTRON_NOTIFY_ENV")
	if nf == "" {
		const loud = "NEUTRON_NOTIFY_ENV IS NOT SET: NEUTRON'S EVENTS TO CORRAL ARE NOT TESTED AGAINST A REAL NEUTRON " +
			"(a Keystone whose catalog's compute endpoint this test may bind: OPENSTACK_DIR=... KEYSTONE_PORT=... " +
			"CORRAL_COMPUTE_URL=http://127.0.0.5:17480/compute/v2.1 scripts/openstack-up.sh, then with that OPENSTACK_ENV " +
			"NEUTRON_DIR=... NEUTRON_PORT=... NEUTRON_NOTIFY_NOVA=1 scripts/neutron-up.sh; docs/neutron.md)"
		fmt.Fprintln(os.Stderr, "cmd/corral: "+loud)
		t.Skip(loud)
	}
	nenv := readEnvFile(t, nf)
	if nenv["NEUTRON_NOTIFY_NOVA"] != "1" {
		t.Fatalf("the Neutron of NEUTRON_NOTIFY_ENV (%s) does not notify: start it with NEUTRON_NOTIFY_NOVA=1", nf)
	}
	if nenv["NEUTRON_OPENSTACK_ENV"] == "" {
		t.Fatalf("%s names no NEUTRON_OPENSTACK_ENV (a Neutron of scripts/neutron-up.sh with Keystone writes it)", nf)
	}
	env := readEnvFile(t, nenv["NEUTRON_OPENSTACK_ENV"])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	region := nenv["NEUTRON_REGION"]

	// Where the catalog sends Neutron: the agent serves its API there.
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: env["OS_AUTH_URL"],
		Username: env["CORRAL_SERVICE_USERNAME"], Password: env["CORRAL_SERVICE_PASSWORD"], DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: env["SERVICE_PROJECT"], DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	csc, err := openstack.NewComputeV2(pc, gophercloud.EndpointOpts{Region: region, Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		t.Fatalf("the catalog's compute endpoint: %v", err)
	}
	ep, err := url.Parse(csc.Endpoint)
	if err != nil || strings.TrimRight(ep.Path, "/") != "/compute/v2.1" {
		t.Fatalf("the catalog's compute endpoint %q is not corral's /compute/v2.1", csc.Endpoint)
	}
	host := ep.Hostname()
	port, err := strconv.Atoi(ep.Port())
	if err != nil {
		t.Fatalf("the catalog's compute endpoint %q has no port", csc.Endpoint)
	}
	if l, err := net.Listen("tcp", net.JoinHostPort(host, ep.Port())); err != nil {
		t.Fatalf("the catalog's compute endpoint %s is taken, by another corral or a Tempest run: %v", ep.Host, err)
	} else {
		_ = l.Close()
	}

	s := sim.New(sim.Options{})
	ir := httptest.NewServer(s)
	t.Cleanup(func() { ir.Close(); s.Close() })
	s.SeedNodes(1, "baremetal-gold")

	const admin = "static-admin-token-events"
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "events1", t.TempDir(), host, 1
	cfg.HTTPPort = port
	for _, p := range []*int{&cfg.RaftPort, &cfg.GossipPort} {
		if *p, err = proc.FreePort(host, port, cfg.RaftPort); err != nil {
			t.Fatal(err)
		}
	}
	cfg.AdminTokens, cfg.PeerToken = []string{admin}, "peer-token-events-0123456"
	cfg.AuthStrategy = strategyKeystone
	for k, v := range map[string]string{"auth_url": env["OS_AUTH_URL"], "username": env["CORRAL_SERVICE_USERNAME"],
		"password": env["CORRAL_SERVICE_PASSWORD"], "project_name": env["SERVICE_PROJECT"]} {
		if err := cfg.Keystone.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Ironic.URL, cfg.Ironic.SyncInterval = ir.URL, time.Second
	cfg.Neutron = neutron.Options{AuthType: neutron.AuthPassword, AuthURL: env["OS_AUTH_URL"], Username: env["CORRAL_SERVICE_USERNAME"],
		Password: env["CORRAL_SERVICE_PASSWORD"], ProjectName: env["SERVICE_PROJECT"], RegionName: region, ValidInterfaces: "public"}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ag, err := startAgent(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ag.stop() })

	base := strings.TrimRight(csc.Endpoint, "/")
	call := func(method, path, token, body string, hdr ...string) (int, http.Header, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Auth-Token", token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		return resp.StatusCode, resp.Header, doc
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		if code, _, doc := call(http.MethodGet, "/flavors", admin, ""); code != http.StatusOK {
			return fmt.Errorf("flavors: %d %v", code, doc)
		}
		return nil
	})
	if code, _, doc := call(http.MethodPost, "/flavors", admin, `{"flavor": {"name": "gold", "id": "gold", "ram": 1, "vcpus": 1, "disk": 1}}`); code != http.StatusOK {
		t.Fatalf("flavor: %d %v", code, doc)
	}
	if code, _, doc := call(http.MethodPost, "/flavors/gold/os-extra_specs", admin, `{"extra_specs": {"resources:CUSTOM_BAREMETAL_GOLD": "1", `+
		`"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}`); code != http.StatusOK {
		t.Fatalf("extra specs: %d %v", code, doc)
	}

	alice, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: env["OS_AUTH_URL"],
		Username: env["ALICE_USERNAME"], Password: env["ALICE_PASSWORD"], DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: env["ALICE_PROJECT"], DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	var id, rid string
	testkit.Eventually(t, 60*time.Second, func() error { // until the node sync mirrored the node
		code, h, doc := call(http.MethodPost, "/servers", alice.TokenID, `{"server": {"name": "events", "imageRef": "http://img/a", `+
			`"flavorRef": "gold", "networks": [{"uuid": "`+nenv["NEUTRON_PROVIDER_NETWORK_ID"]+`"}]}}`)
		if code != http.StatusAccepted {
			return fmt.Errorf("boot: %d %v", code, doc)
		}
		id, rid = doc["server"].(map[string]any)["id"].(string), h.Get("X-Compute-Request-Id")
		return nil
	})
	t.Cleanup(func() {
		// The agent deletes the server and its port before it stops; what
		// it could not is deleted here, not left in the Neutron.
		if code, _, _ := call(http.MethodDelete, "/servers/"+id, admin, ""); code == http.StatusNoContent {
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				if code, _, _ := call(http.MethodGet, "/servers/"+id, admin, ""); code == http.StatusNotFound {
					break
				}
				time.Sleep(200 * time.Millisecond) // pacing the poll
			}
		}
		nc, err := neutron.New(cfg.Neutron)
		if err != nil {
			return
		}
		ports, _ := nc.Ports(context.Background(), neutron.PortFilter{DeviceID: id})
		for _, p := range ports {
			_ = nc.DeletePort(context.Background(), p.ID)
		}
	})
	testkit.Eventually(t, 90*time.Second, func() error {
		code, _, doc := call(http.MethodGet, "/servers/"+id, alice.TokenID, "")
		if code != http.StatusOK {
			return fmt.Errorf("server: %d %v", code, doc)
		}
		if st := doc["server"].(map[string]any)["status"]; st != "ACTIVE" {
			if st == "ERROR" {
				t.Fatalf("the boot failed: %v", doc["server"].(map[string]any)["fault"])
			}
			return fmt.Errorf("server %s is %v", id, st)
		}
		return nil
	})
	// Neutron sends its events every couple of seconds, batched.
	testkit.Eventually(t, 60*time.Second, func() error {
		code, _, doc := call(http.MethodGet, "/servers/"+id+"/os-instance-actions/"+rid, alice.TokenID, "",
			"OpenStack-API-Version", "compute 2.51")
		if code != http.StatusOK {
			return fmt.Errorf("create action: %d %v", code, doc)
		}
		var names []string
		for _, ev := range doc["instanceAction"].(map[string]any)["events"].([]any) {
			m := ev.(map[string]any)
			if m["event"] == "network-changed" && m["result"] == "Success" {
				return nil
			}
			names = append(names, fmt.Sprint(m["event"]))
		}
		return fmt.Errorf("no network-changed among the create's events %v yet", names)
	})
}
