package neutron

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/provider"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// realEnv reads NEUTRON_ENV (scripts/neutron-up.sh) and OPENSTACK_ENV
// (scripts/openstack-up.sh). Without NEUTRON_ENV it says so loudly and
// skips: the client is then tested against the fake only.
func realEnv(t *testing.T) map[string]string {
	t.Helper()
	nf := os.Getenv("NEUTRON_ENV")
	if nf == "" {
		const loud = "NEUTRON_ENV IS NOT SET: THE NEUTRON CLIENT IS NOT TESTED AGAINST A REAL NEUTRON " +
			"(export NEUTRON_ENV=$(scripts/neutron-up.sh) and OPENSTACK_ENV=$(scripts/openstack-up.sh), as CI does)"
		fmt.Fprintln(os.Stderr, "neutron: "+loud)
		t.Log(loud)
		t.Skip(loud)
	}
	of := os.Getenv("OPENSTACK_ENV")
	if of == "" {
		t.Fatal("NEUTRON_ENV is set but OPENSTACK_ENV (the env file of scripts/openstack-up.sh) is not")
	}
	env := map[string]string{}
	for _, path := range []string{of, nf} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				env[k] = v
			}
		}
		_ = f.Close()
	}
	for _, k := range []string{"OS_AUTH_URL", "CORRAL_SERVICE_USERNAME", "ALICE_USERNAME", "BOB_USERNAME",
		"NEUTRON_URL", "NEUTRON_PROVIDER_NETWORK_ID", "NEUTRON_PROVIDER_SUBNET_ID"} {
		if env[k] == "" {
			t.Fatalf("%s is not in OPENSTACK_ENV/NEUTRON_ENV", k)
		}
	}
	return env
}

// login authenticates a Keystone user, as a user's own client would.
func login(t *testing.T, env map[string]string, user, password, project string) (*gophercloud.ProviderClient, string) {
	t.Helper()
	pc, err := openstack.NewClient(env["OS_AUTH_URL"])
	if err != nil {
		t.Fatal(err)
	}
	pc.HTTPClient = http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	err = openstack.Authenticate(context.Background(), pc, gophercloud.AuthOptions{IdentityEndpoint: env["OS_AUTH_URL"],
		Username: user, Password: password, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: project, DomainName: "Default"}})
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	cr, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		t.Fatalf("login %s: not a Keystone v3 token", user)
	}
	p, err := cr.ExtractProject()
	if err != nil || p == nil {
		t.Fatalf("login %s: project of the token: %v", user, err)
	}
	return pc, p.ID
}

func randomMAC(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[0], b[1], b[2])
}

func TestRealNeutron(t *testing.T) {
	env := realEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	svc := Options{AuthType: AuthPassword, AuthURL: env["OS_AUTH_URL"], Username: env["CORRAL_SERVICE_USERNAME"],
		Password: env["CORRAL_SERVICE_PASSWORD"], ProjectName: env["SERVICE_PROJECT"], RegionName: "RegionOne",
		ValidInterfaces: "public"}
	c := mustNew(t, svc)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, want := c.Endpoint(), strings.TrimRight(env["NEUTRON_URL"], "/"); got != want {
		t.Errorf("endpoint from the catalog %s, want %s", got, want)
	}
	bad := svc
	bad.Password = "not-the-password"
	if err := mustNew(t, bad).Check(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Check with a wrong password = %v, want ErrUnauthorized", err)
	}

	alicePC, alice := login(t, env, env["ALICE_USERNAME"], env["ALICE_PASSWORD"], env["ALICE_PROJECT"])
	bobPC, bob := login(t, env, env["BOB_USERNAME"], env["BOB_PASSWORD"], env["BOB_PROJECT"])
	provNet := env["NEUTRON_PROVIDER_NETWORK_ID"]

	// The shared provider network, and a network of bob's project only.
	n, err := c.Network(ctx, provNet)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Shared || n.NetworkType != "flat" || n.PhysicalNetwork != env["NEUTRON_PHYSNET"] || len(n.Subnets) == 0 {
		t.Errorf("provider network %+v", n)
	}
	sub, err := c.Subnet(ctx, env["NEUTRON_PROVIDER_SUBNET_ID"])
	if err != nil || sub.CIDR != env["NEUTRON_PROVIDER_CIDR"] || sub.NetworkID != provNet {
		t.Fatalf("provider subnet %+v, %v", sub, err)
	}
	admin, _ := login(t, env, env["OS_USERNAME"], env["OS_PASSWORD"], env["OS_PROJECT_NAME"])
	asc, err := openstack.NewNetworkV2(admin, gophercloud.EndpointOpts{Region: "RegionOne", Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	seg := 100 + int(randomMAC(t)[15]%90)
	var bobNet Network
	err = networks.Create(ctx, asc, provider.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "bob-private-" + t.Name(),
		ProjectID: bob}, Segments: []provider.Segment{{NetworkType: "vlan", PhysicalNetwork: env["NEUTRON_PHYSNET"],
		SegmentationID: seg}}}).ExtractIntoStructPtr(&bobNet, "network")
	if err != nil {
		t.Fatalf("creating bob's network (VLAN %d): %v", seg, err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), asc, bobNet.ID).ExtractErr() })
	for _, tc := range []struct {
		project string
		want    map[string]bool
	}{{alice, map[string]bool{provNet: true, bobNet.ID: false}}, {bob, map[string]bool{provNet: true, bobNet.ID: true}}} {
		nets, err := c.NetworksFor(ctx, tc.project)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, n := range nets {
			got[n.ID] = n.VisibleTo(tc.project)
		}
		for id, want := range tc.want {
			if got[id] != want {
				t.Errorf("network %s usable by project %s: %v, want %v", id, tc.project, got[id], want)
			}
		}
	}
	if n, err := c.Network(ctx, bobNet.ID); err != nil || n.VisibleTo(alice) || !n.VisibleTo(bob) {
		t.Errorf("bob's network %+v (%v): visible to alice or not to bob", n, err)
	}

	// A bare-metal port of a server of alice's, made by the service.
	server, node, mac := "srv-"+randomMAC(t)[9:], "node-"+randomMAC(t)[9:], randomMAC(t)
	ip := fmt.Sprintf("%s.%d", strings.Join(strings.Split(strings.Split(sub.CIDR, "/")[0], ".")[:3], "."), 100+int(mac[16]%100))
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: alice, DeviceID: server, DeviceOwner: "compute:nova",
		Description: CreatedByCorral, VNICType: VNICBaremetal, HostID: node, MACAddress: mac, FixedIPs: []FixedIP{{SubnetID: sub.ID, IPAddress: ip}}})
	if err != nil {
		t.Fatalf("create port: %v", err)
	}
	t.Cleanup(func() { _ = c.DeletePort(context.Background(), p.ID) })
	if p.ProjectID != alice || p.DeviceID != server || p.HostID != node || p.VNICType != VNICBaremetal ||
		p.MACAddress != mac || p.Description != CreatedByCorral || len(p.FixedIPs) != 1 || p.FixedIPs[0].IPAddress != ip {
		t.Errorf("port %+v", p)
	}
	if p.VIFType != "binding_failed" && p.VIFType != "other" {
		t.Errorf("vif_type %q: with a host, the port is bound or binding_failed", p.VIFType)
	}
	// Alice sees her port with her own token; bob does not.
	if _, err := ports.Get(ctx, networkClient(t, alicePC), p.ID).Extract(); err != nil {
		t.Errorf("alice reading her port: %v", err)
	}
	if _, err := ports.Get(ctx, networkClient(t, bobPC), p.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("bob reading alice's port = %v, want 404", err)
	}
	// The MAC and the address are taken on that network.
	_, err = c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: bob, MACAddress: mac})
	if !errors.Is(err, ErrConflict) || ErrorType(err) != "MacAddressInUse" {
		t.Errorf("second port with MAC %s = %v (type %q), want ErrConflict MacAddressInUse", mac, err, ErrorType(err))
	}
	_, err = c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: bob, FixedIPs: []FixedIP{{SubnetID: sub.ID, IPAddress: ip}}})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("second port with address %s = %v, want ErrConflict", ip, err)
	}
	for _, f := range []PortFilter{{DeviceID: server}, {NetworkID: provNet, ProjectID: alice}, {NetworkID: provNet, FixedIP: ip}} {
		list, err := c.Ports(ctx, f)
		found := false
		for _, q := range list {
			found = found || q.ID == p.ID
		}
		if err != nil || !found || ((f.DeviceID != "" || f.FixedIP != "") && len(list) != 1) {
			t.Errorf("ports %+v = %d ports (ours found: %v), %v", f, len(list), found, err)
		}
	}
	// Unbind: kept, no server, no host.
	u, err := c.UnbindPort(ctx, p.ID)
	if err != nil {
		t.Fatalf("unbind: %v", err)
	}
	if u.DeviceID != "" || u.DeviceOwner != "" || u.HostID != "" || u.VIFType != "unbound" {
		t.Errorf("unbound port %+v", u)
	}
	if list, err := c.Ports(ctx, PortFilter{DeviceID: server}); err != nil || len(list) != 0 {
		t.Errorf("ports of the server after unbind: %d, %v", len(list), err)
	}
	// Unbound, it takes a new MAC of Neutron's: the NIC's is free again.
	r, err := c.ResetMAC(ctx, p.ID)
	if err != nil || r.MACAddress == mac || !strings.HasPrefix(r.MACAddress, "fa:16:3e:") {
		t.Errorf("MAC reset: %+v, %v; want a new fa:16:3e MAC", r, err)
	}
	q, err := c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: bob, MACAddress: mac})
	if err != nil {
		t.Errorf("a port with MAC %s after the reset: %v", mac, err)
	} else {
		_ = c.DeletePort(ctx, q.ID)
	}
	if err := c.DeletePort(ctx, p.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.DeletePort(ctx, p.ID); err != nil {
		t.Errorf("delete of a port already gone = %v, want nil", err)
	}
	if _, err := c.Port(ctx, p.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("show of a deleted port = %v, want ErrNotFound", err)
	}
}

func networkClient(t *testing.T, pc *gophercloud.ProviderClient) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: "RegionOne", Availability: gophercloud.AvailabilityPublic})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
