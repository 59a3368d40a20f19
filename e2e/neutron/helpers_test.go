// Package neutron runs corral's bare-metal servers on a real Neutron:
// three `corral agent` processes with [neutron] and Keystone auth drive the
// Keystone-protected Ironic of scripts/openstack-up.sh, whose nodes use the
// flat network interface (OPENSTACK_IRONIC_NEUTRON=1), and the Neutron of
// scripts/neutron-up.sh; the users boot with Keystone tokens. Each agent
// reaches Neutron through a proxy of the test's, which can hold the answer
// to a port create (an answer lost, an owner stuck mid-deploy). The tests
// read Neutron and Ironic as an admin to check what corral did. Without
// NEUTRON_ENV they skip loudly (testkit/realneutron).
package neutron

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/realneutron"
)

const (
	baseIP      = 120 // agents listen on 127.0.0.120 and up, apart from other e2e packages
	hosts       = 3
	deviceOwner = "compute:nova"
	imageRef    = "http://images.example.test/ubuntu-24.04.qcow2" // Ironic's fake deploy never fetches it
	// computeVersion shows the server's host and node to an admin.
	computeVersion = "2.47"
)

// fixture is the cluster, the control plane and the test's view of both.
type fixture struct {
	t       *testing.T
	env     *realneutron.Env
	admin   *realneutron.Session // reads every project's ports with their binding
	alice   *realneutron.Session // boots the servers
	ir      *e2e.Ironic
	nics    map[string]e2e.NIC // by node
	c       *e2e.Cluster
	proxies []*proxy // by agent
	flavor  string

	mu      sync.Mutex
	servers []string // every server booted, for the clean-up
}

// start enrolls nodes flat nodes in the Keystone-protected Ironic and
// starts the agents.
func start(t *testing.T, nodes int) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	env := realneutron.Load(t, "corral's Neutron ports with real agents, a real Ironic (flat) and Keystone")
	ironicURL := env.IronicNeutron(t)
	f := &fixture{t: t, env: env, admin: env.Login(t, realneutron.Admin), alice: env.Login(t, realneutron.Alice)}
	// Registered first, so it runs last, once the agents are gone: the
	// ports a failed test left.
	f.admin.DeleteDevicePortsOnCleanup(t, func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.servers)
	})
	svc := env.Login(t, realneutron.Service)
	f.ir = e2e.KeystoneIronic(t, ironicURL, svc.Provider, "nt")
	class := f.ir.Class("gold")
	// The nodes enroll while the agents build and start.
	enrolled := f.ir.StartEnrollNetworkNodes(t, nodes, class, "flat", env.Physnet(), env.AgentHosts())

	for i := range hosts {
		f.proxies = append(f.proxies, newProxy(t, fmt.Sprintf("peer%d", i+1), env.NeutronURL()))
	}
	sv := env.User(realneutron.Service)
	auth := []string{"USERNAME=" + sv.Username, "PASSWORD=" + sv.Password, "PROJECT_NAME=" + sv.Project}
	// The default node sync (5 s): Ironic is one process, and every
	// listing of the nodes slows its VIF attaches. Raft's heartbeat and
	// election timeouts twice the defaults: race-built agents beside
	// Ironic, Neutron and Keystone on a loaded machine lost their leader
	// to missed heartbeats, and this test is about Neutron, not failover
	// time.
	agentEnv := []string{"CORRAL_AUTH_STRATEGY=keystone",
		"CORRAL_RAFT_HEARTBEAT_TIMEOUT=2s", "CORRAL_RAFT_ELECTION_TIMEOUT=2s", "CORRAL_RAFT_LEADER_LEASE_TIMEOUT=1s",
		"CORRAL_KEYSTONE_AUTHTOKEN_AUTH_URL=" + env.AuthURL(), "CORRAL_KEYSTONE_AUTHTOKEN_TOKEN_CACHE_TIME=60",
		"CORRAL_IRONIC_AUTH_TYPE=password", "CORRAL_IRONIC_AUTH_URL=" + env.AuthURL(),
		"CORRAL_NEUTRON_AUTH_TYPE=password", "CORRAL_NEUTRON_AUTH_URL=" + env.AuthURL(),
		"CORRAL_NEUTRON_REGION_NAME=" + env.Region(), "CORRAL_NEUTRON_VALID_INTERFACES=public",
		// The leader's port reaper at its shortest grace (testConcurrent).
		"CORRAL_NEUTRON_PORT_REAP_GRACE=1m", "CORRAL_NEUTRON_PORT_REAP_INTERVAL=5s"}
	for _, kv := range auth {
		agentEnv = append(agentEnv, "CORRAL_KEYSTONE_AUTHTOKEN_"+kv, "CORRAL_IRONIC_"+kv, "CORRAL_NEUTRON_"+kv)
	}
	took := time.Now()
	f.c = e2e.StartWith(t, hosts, e2e.Options{BaseIP: baseIP, Env: agentEnv}, func(i int, a *e2e.Agent) {
		a.Env = append(a.Env, "CORRAL_NEUTRON_ENDPOINT_OVERRIDE="+f.proxies[i].URL())
	})
	f.c.AwaitReady(90 * time.Second)
	for _, a := range f.c.Agents {
		if !a.Running() {
			t.Fatalf("agent %s exited during start-up (see its log in %s)", a.Name, f.c.Dir)
		}
	}
	f.flavor = e2e.BareMetalFlavor(t, f.c.Agents[0], class+"-bm", class)
	// A boot is checked against the flavor in the receiving peer's replica.
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, a := range f.c.Agents {
			var body map[string]any
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := a.Client().Do(ctx, http.MethodGet, "/compute/v2.1/flavors/"+f.flavor+"/os-extra_specs?consistency=stale", nil, &body)
			cancel()
			if err != nil || fmt.Sprint(body["extra_specs"]) == "map[]" {
				return fmt.Errorf("%s has no extra specs of flavor %s yet (%v)", a.Name, f.flavor, err)
			}
		}
		return nil
	})
	f.nics = enrolled()
	f.awaitNodes(t)
	t.Logf("%d agents up, %d nodes mirrored, flavor on every replica in %s", hosts, nodes, time.Since(took).Round(time.Millisecond))
	return f
}

// awaitNodes waits until a running agent mirrors every node as available
// (the last step's undeploys seen), so that each boot finds a node.
func (f *fixture) awaitNodes(t *testing.T) {
	t.Helper()
	ids := make([]string, 0, len(f.nics))
	for id := range f.nics {
		ids = append(ids, id)
	}
	e2e.AwaitNodes(t, f.running()[0], ids, 90*time.Second)
}

// running are the agents whose process runs.
func (f *fixture) running() []*e2e.Agent {
	var out []*e2e.Agent
	for _, a := range f.c.Agents {
		if a.Running() {
			out = append(out, a)
		}
	}
	return out
}

// compute is a compute client of agent a with alice's Keystone token.
func (f *fixture) compute(a *e2e.Agent) *gophercloud.ServiceClient {
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: 60 * time.Second}}
	pc.SetToken(f.alice.Token)
	u := a.URL() + "/compute/v2.1/"
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: u, ResourceBase: u, Type: "compute", Microversion: computeVersion}
}

// boot has alice boot a server with the networks through agent a and
// returns its id.
func (f *fixture) boot(a *e2e.Agent, name string, nets []servers.Network) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := servers.Create(ctx, f.compute(a), servers.CreateOpts{Name: name, FlavorRef: f.flavor, ImageRef: imageRef,
		Networks: nets}, nil).Extract()
	if err != nil {
		return "", fmt.Errorf("boot %s through %s: %w", name, a.Name, err)
	}
	f.mu.Lock()
	f.servers = append(f.servers, s.ID)
	f.mu.Unlock()
	return s.ID, nil
}

// mustBoot is boot through the first running agent, failing the test on error.
func (f *fixture) mustBoot(name string, nets ...servers.Network) string {
	f.t.Helper()
	id, err := f.boot(f.running()[0], name, nets)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// active waits until every server is ACTIVE (fails on ERROR).
func (f *fixture) active(t *testing.T, ids []string, timeout time.Duration) map[string]*servers.Server {
	t.Helper()
	got := e2e.WaitServers(t, f.compute(f.running()[0]), ids, timeout, e2e.Settled)
	for id, s := range got {
		if s.Status != "ACTIVE" {
			msg, _ := e2e.FaultOf(s)
			t.Fatalf("server %s is %s: %s", id, s.Status, msg)
		}
	}
	return got
}

// remove deletes the servers through alice and waits until they are gone.
// A delete answered 503 (no leader during an election) is sent again.
func (f *fixture) remove(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	cl := f.compute(f.running()[0])
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			deadline := time.Now().Add(time.Minute)
			for again := false; ; again = true {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				errs[i] = servers.Delete(ctx, cl, id).ExtractErr()
				cancel()
				if again && gophercloud.ResponseCodeIs(errs[i], http.StatusNotFound) {
					errs[i] = nil // the first delete went through after all
				}
				if !gophercloud.ResponseCodeIs(errs[i], http.StatusServiceUnavailable) || time.Now().After(deadline) {
					return
				}
				time.Sleep(time.Second) // pacing the retry, not waiting for a state
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("delete server %s: %v", ids[i], err)
		}
	}
	e2e.WaitGone(t, cl, ids, timeout)
}

// purgeOnCleanup deletes, when the (sub)test ends, the servers of ids
// that are still there, and waits until they are gone, so that a failed
// step leaves the nodes to the next. The test's own deletes make it a
// no-op.
func (f *fixture) purgeOnCleanup(t *testing.T, ids *[]string) {
	t.Cleanup(func() {
		a := f.running()
		if len(a) == 0 {
			return
		}
		cl := f.compute(a[0])
		left := map[string]bool{}
		for _, id := range *ids {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := servers.Delete(ctx, cl, id).ExtractErr()
			cancel()
			if err == nil {
				left[id] = true
			}
		}
		deadline := time.Now().Add(3 * time.Minute)
		for len(left) > 0 && time.Now().Before(deadline) {
			for id := range left {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := servers.Get(ctx, cl, id).Err; gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					delete(left, id)
				}
				cancel()
			}
			time.Sleep(time.Second) // pacing the poll
		}
		if len(left) > 0 {
			t.Logf("clean-up: %d servers not gone after 3 minutes", len(left))
		}
	})
}

// placed is where corral shows a server: its owner host and node (admin view).
type placed struct {
	Host string `json:"OS-EXT-SRV-ATTR:host"`
	Node string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
}

func (f *fixture) placement(t *testing.T, id string) placed {
	t.Helper()
	cl := e2e.Compute(f.running()[0])
	cl.Microversion = computeVersion
	var p placed
	// Polled: a peer answers 503 while an election runs.
	testkit.Eventually(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := servers.Get(ctx, cl, id).ExtractInto(&p); err != nil {
			return fmt.Errorf("server %s as admin: %w", id, err)
		}
		return nil
	})
	if p.Node == "" || f.nics[p.Node].MAC == "" {
		t.Fatalf("server %s is on node %q, not one of the test's", id, p.Node)
	}
	return p
}

// port is a Neutron port as an admin sees it, with its binding.
type port struct {
	ports.Port
	portsbinding.PortsBindingExt
}

// portsOf lists the ports whose device is the server (admin view).
func (f *fixture) portsOf(ctx context.Context, device string) ([]port, error) {
	return f.listPorts(ctx, ports.ListOpts{DeviceID: device})
}

func (f *fixture) listPorts(ctx context.Context, opts ports.ListOpts) ([]port, error) {
	pages, err := ports.List(f.admin.Network, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports %+v: %w", opts, err)
	}
	var out []port
	if err := ports.ExtractPortsInto(pages, &out); err != nil {
		return nil, fmt.Errorf("list ports %+v: %w", opts, err)
	}
	return out, nil
}

// getPort reads a port (admin view); nil when it is gone.
func (f *fixture) getPort(t *testing.T, id string) *port {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var p port
	err := ports.Get(ctx, f.admin.Network, id).ExtractInto(&p)
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("port %s: %v", id, err)
	}
	return &p
}

// checkPort asserts what a running server's one port must be: the
// server's device in alice's project, compute:nova, baremetal, bound to
// the server's node, on the network, with the node's NIC MAC; the one VIF
// Ironic lists on the node; and the server's address on netName in
// Nova's shape. It returns the port.
func (f *fixture) checkPort(t *testing.T, s *servers.Server, network, netName string) port {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	where := f.placement(t, s.ID)
	ps, err := f.portsOf(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("server %s has %d ports in Neutron, want 1: %+v", s.ID, len(ps), ps)
	}
	p := ps[0]
	nic := f.nics[where.Node]
	if p.DeviceOwner != deviceOwner || p.VNICType != "baremetal" || p.HostID != where.Node || p.ProjectID != f.alice.ProjectID ||
		p.NetworkID != network || !strings.EqualFold(p.MACAddress, nic.MAC) || len(p.FixedIPs) != 1 {
		t.Errorf("port %s of server %s: owner %q vnic %q host %q project %q network %q MAC %q IPs %v; want %s, baremetal, "+
			"node %s, project %s, network %s, the NIC's MAC %s, one IP", p.ID, s.ID, p.DeviceOwner, p.VNICType, p.HostID,
			p.ProjectID, p.NetworkID, p.MACAddress, p.FixedIPs, deviceOwner, where.Node, f.alice.ProjectID, network, nic.MAC)
	}
	// Bound by the node's agent, or failed without one: never unbound.
	if want := map[bool]string{true: "other", false: "binding_failed"}[nic.Agent]; p.VIFType != want {
		t.Errorf("port %s of server %s on node %s (agent: %v): vif_type %q, want %q", p.ID, s.ID, where.Node, nic.Agent, p.VIFType, want)
	}
	if vifs, err := f.ir.VIFs(ctx, where.Node); err != nil || !slices.Equal(vifs, []string{p.ID}) {
		t.Errorf("Ironic's VIFs on node %s: %v (%v), want [%s]", where.Node, vifs, err, p.ID)
	}
	want := map[string]any{netName: []any{map[string]any{"addr": firstIP(p), "version": float64(4),
		"OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress}}}
	if fmt.Sprint(s.Addresses) != fmt.Sprint(want) {
		t.Errorf("server %s shows addresses %v, want %v", s.ID, s.Addresses, want)
	}
	return p
}

func firstIP(p port) string {
	if len(p.FixedIPs) == 0 {
		return ""
	}
	return p.FixedIPs[0].IPAddress
}

// checkReleased asserts that a deleted server left no port with it as
// device, that the ports corral made for it are gone, and that its node
// carries no VIF.
func (f *fixture) checkReleased(t *testing.T, server, node string, made ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ps, err := f.portsOf(ctx, server); err != nil || len(ps) != 0 {
		t.Errorf("deleted server %s still has ports %+v (%v)", server, ps, err)
	}
	for _, id := range made {
		if p := f.getPort(t, id); p != nil {
			t.Errorf("port %s that corral made for server %s is still there: %+v", id, server, p)
		}
	}
	if vifs, err := f.ir.VIFs(ctx, node); err != nil || len(vifs) != 0 {
		t.Errorf("node %s of deleted server %s still has VIFs %v (%v)", node, server, vifs, err)
	}
}
