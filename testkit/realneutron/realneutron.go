// Package realneutron is the set-up the tests against a real Neutron
// share: the env files of scripts/openstack-up.sh (OPENSTACK_ENV: Keystone,
// its users, the Keystone-protected Ironic) and scripts/neutron-up.sh
// (NEUTRON_ENV: Neutron and its shared provider network), Keystone logins
// with a Neutron client each, and the clean-up of what a test leaves in
// Neutron. Without NEUTRON_ENV a test says so loudly and skips, or fails
// in CI, which sets it.
//
// It speaks Neutron through gophercloud, not through corral's neutron
// package, so that package's own tests can use it.
package realneutron

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/corral-dev/corral/testkit"
)

// Env is the control plane of the two env files.
type Env struct {
	vars map[string]string
}

// required are the keys every test of a real Neutron reads.
var required = []string{"OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "SERVICE_PROJECT",
	"CORRAL_SERVICE_USERNAME", "CORRAL_SERVICE_PASSWORD", "ALICE_USERNAME", "ALICE_PASSWORD", "ALICE_PROJECT",
	"BOB_USERNAME", "BOB_PASSWORD", "BOB_PROJECT", "NEUTRON_URL", "NEUTRON_REGION", "NEUTRON_PHYSNET",
	"NEUTRON_PROVIDER_NETWORK", "NEUTRON_PROVIDER_NETWORK_ID", "NEUTRON_PROVIDER_SUBNET_ID", "NEUTRON_PROVIDER_CIDR"}

// Load reads OPENSTACK_ENV and NEUTRON_ENV. Without NEUTRON_ENV it prints
// to stderr, in capitals, that what (e.g. "the Neutron client") is not
// tested against a real Neutron, and skips the test, or fails it in CI
// (testkit.Missing); NEUTRON_ENV without OPENSTACK_ENV, an unreadable
// file or a missing key fails it.
func Load(t testing.TB, what string) *Env {
	t.Helper()
	nf := os.Getenv("NEUTRON_ENV")
	if nf == "" {
		testkit.Missing(t, fmt.Sprintf("NEUTRON_ENV is not set: %s is not tested against a real Neutron "+
			"(export OPENSTACK_ENV=$(OPENSTACK_IRONIC_NEUTRON=1 scripts/openstack-up.sh) and "+
			"NEUTRON_ENV=$(scripts/neutron-up.sh), as .ci/run does)", what))
	}
	of := os.Getenv("OPENSTACK_ENV")
	if of == "" {
		t.Fatal("NEUTRON_ENV is set but OPENSTACK_ENV (the env file of scripts/openstack-up.sh) is not")
	}
	e := &Env{vars: map[string]string{}}
	for _, path := range []string{of, nf} {
		if err := readEnvFile(path, e.vars); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range required {
		if e.vars[k] == "" {
			t.Fatalf("%s is not in OPENSTACK_ENV (%s) or NEUTRON_ENV (%s)", k, of, nf)
		}
	}
	return e
}

func readEnvFile(path string, into map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			into[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("env file %s: %w", path, err)
	}
	return nil
}

// Get is a key of either file ("" when absent).
func (e *Env) Get(key string) string { return e.vars[key] }

// All are the keys of both files, a copy.
func (e *Env) All() map[string]string { return maps.Clone(e.vars) }

// AuthURL is Keystone's identity endpoint (…/v3).
func (e *Env) AuthURL() string { return e.vars["OS_AUTH_URL"] }

// Region is the catalog region of Neutron's endpoint.
func (e *Env) Region() string { return e.vars["NEUTRON_REGION"] }

// NeutronURL is Neutron's root URL, as the catalog has it.
func (e *Env) NeutronURL() string { return strings.TrimRight(e.vars["NEUTRON_URL"], "/") }

// Physnet is the physical network of the provider network (and of the
// VLAN range tests may take segments from).
func (e *Env) Physnet() string { return e.vars["NEUTRON_PHYSNET"] }

// AgentHosts are the node UUIDs Neutron has a live "Baremetal Node" agent
// for (neutron-up.sh's NEUTRON_BAREMETAL_AGENT_HOSTS): the ports of a node
// enrolled with one of them are bound (vif_type other) at the first
// attempt, as with networking-baremetal's agent; other nodes' end in
// binding_failed after ten.
func (e *Env) AgentHosts() []string {
	var out []string
	for _, h := range strings.Split(e.vars["NEUTRON_BAREMETAL_AGENT_HOSTS"], ",") {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// Provider is the shared flat network every project may use.
type Provider struct {
	Name, NetworkID, SubnetID, CIDR string
}

// Provider is neutron-up.sh's shared network.
func (e *Env) Provider() Provider {
	return Provider{Name: e.vars["NEUTRON_PROVIDER_NETWORK"], NetworkID: e.vars["NEUTRON_PROVIDER_NETWORK_ID"],
		SubnetID: e.vars["NEUTRON_PROVIDER_SUBNET_ID"], CIDR: e.vars["NEUTRON_PROVIDER_CIDR"]}
}

// Credentials are a Keystone user's password login, scoped to a project
// (domains Default).
type Credentials struct {
	Username, Password, Project string
}

// Who names the users of OPENSTACK_ENV.
const (
	Admin   = "OS"     // admin, project admin, role admin
	Service = "CORRAL" // corral's service user (admin in project service)
	Alice   = "ALICE"  // member of demo-a
	Bob     = "BOB"    // member of demo-b
	Carol   = "CAROL"  // reader of demo-a
	Ironic  = "IRONIC" // Ironic's service user
)

// User is the password login of who (Admin, Service, Ironic, Alice, Bob, Carol).
func (e *Env) User(who string) Credentials {
	switch who {
	case Admin:
		return Credentials{e.vars["OS_USERNAME"], e.vars["OS_PASSWORD"], e.vars["OS_PROJECT_NAME"]}
	case Service, Ironic:
		return Credentials{e.vars[who+"_SERVICE_USERNAME"], e.vars[who+"_SERVICE_PASSWORD"], e.vars["SERVICE_PROJECT"]}
	}
	return Credentials{e.vars[who+"_USERNAME"], e.vars[who+"_PASSWORD"], e.vars[who+"_PROJECT"]}
}

// IronicNeutron fails the test unless the Keystone-protected Ironic was
// started with the flat network interface (openstack-up.sh's
// OPENSTACK_IRONIC_NEUTRON=1), and returns that Ironic's URL.
func (e *Env) IronicNeutron(t testing.TB) string {
	t.Helper()
	u := e.vars["OPENSTACK_IRONIC_URL"]
	ifs := strings.Split(e.vars["OPENSTACK_IRONIC_NETWORK_INTERFACES"], ",")
	if u == "" || !slices.Contains(ifs, "flat") {
		t.Fatalf("the Keystone-protected Ironic of OPENSTACK_ENV (%q) has network interfaces %q, not flat: "+
			"start it with OPENSTACK_IRONIC_NEUTRON=1 scripts/openstack-up.sh, as .ci/run does", u, ifs)
	}
	if n := e.vars["OPENSTACK_IRONIC_NEUTRON_NETWORK"]; n != e.vars["NEUTRON_PROVIDER_NETWORK"] {
		t.Fatalf("the Keystone-protected Ironic's cleaning network is %q, Neutron's shared network %q", n,
			e.vars["NEUTRON_PROVIDER_NETWORK"])
	}
	return u
}

// Session is a user's Keystone login with a Neutron client (the endpoint
// from the catalog, public, in the env's region).
type Session struct {
	Provider  *gophercloud.ProviderClient
	Network   *gophercloud.ServiceClient
	ProjectID string
	UserID    string
	Token     string
}

// Login logs who in (see User) and fails the test when Keystone refuses.
func (e *Env) Login(t testing.TB, who string) *Session {
	t.Helper()
	c := e.User(who)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := openstack.NewClient(e.AuthURL())
	if err != nil {
		t.Fatal(err)
	}
	pc.HTTPClient = http.Client{Transport: &http.Transport{}, Timeout: 60 * time.Second}
	err = openstack.Authenticate(ctx, pc, gophercloud.AuthOptions{IdentityEndpoint: e.AuthURL(),
		Username: c.Username, Password: c.Password, DomainName: "Default", AllowReauth: true,
		Scope: &gophercloud.AuthScope{ProjectName: c.Project, DomainName: "Default"}})
	if err != nil {
		t.Fatalf("log %s in to project %s: %v", c.Username, c.Project, err)
	}
	cr, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		t.Fatalf("log %s in: not a Keystone v3 token", c.Username)
	}
	p, err := cr.ExtractProject()
	if err != nil || p == nil {
		t.Fatalf("log %s in: project of the token: %v", c.Username, err)
	}
	u, err := cr.ExtractUser()
	if err != nil || u == nil {
		t.Fatalf("log %s in: user of the token: %v", c.Username, err)
	}
	sc, err := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: e.Region(), Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		t.Fatalf("the network endpoint in Keystone's catalog: %v", err)
	}
	return &Session{Provider: pc, Network: sc, ProjectID: p.ID, UserID: u.ID, Token: pc.Token()}
}

// Port reads a port; a port that is gone is (nil, nil).
func (s *Session) Port(ctx context.Context, id string) (*ports.Port, error) {
	p, err := ports.Get(ctx, s.Network, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", id, err)
	}
	return p, nil
}

// Ports lists the ports the session sees that match opts.
func (s *Session) Ports(ctx context.Context, opts ports.ListOpts) ([]ports.Port, error) {
	pages, err := ports.List(s.Network, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list ports %+v: %w", opts, err)
	}
	out, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, fmt.Errorf("list ports %+v: %w", opts, err)
	}
	return out, nil
}

// DeletePortOnCleanup deletes the port when the test ends (gone already
// is fine).
func (s *Session) DeletePortOnCleanup(t testing.TB, id string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := ports.Delete(ctx, s.Network, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Logf("clean-up: delete port %s: %v", id, err)
		}
	})
}

// DeleteDevicePortsOnCleanup deletes, when the test ends, every port
// whose device is one of the ids devices returns then, except keep: what
// a failed test left of its servers' ports.
func (s *Session) DeleteDevicePortsOnCleanup(t testing.TB, devices func() []string, keep ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, d := range devices() {
			ps, err := s.Ports(ctx, ports.ListOpts{DeviceID: d})
			if err != nil {
				t.Logf("clean-up: %v", err)
				return
			}
			for _, p := range ps {
				if slices.Contains(keep, p.ID) {
					continue
				}
				t.Logf("clean-up: deleting port %s that device %s left", p.ID, d)
				if err := ports.Delete(ctx, s.Network, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					t.Logf("clean-up: delete port %s: %v", p.ID, err)
				}
			}
		}
	})
}

// DeleteNetworkOnCleanup deletes the network when the test ends, after
// the ports on it that are left (its own and the clean-ups registered
// later run first).
func (s *Session) DeleteNetworkOnCleanup(t testing.TB, id string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if left, err := s.Ports(ctx, ports.ListOpts{NetworkID: id}); err == nil {
			for _, p := range left {
				_ = ports.Delete(ctx, s.Network, p.ID).ExtractErr()
			}
		}
		if err := networks.Delete(ctx, s.Network, id).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Logf("clean-up: delete network %s: %v", id, err)
		}
	})
}
