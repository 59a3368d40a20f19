package neutron

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/provider"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/corral-dev/corral/testkit/realneutron"
)

func randomMAC(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", b[0], b[1], b[2])
}

func TestRealNeutron(t *testing.T) {
	env := realneutron.Load(t, "the Neutron client")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sv := env.User(realneutron.Service)
	svc := Options{AuthType: AuthPassword, AuthURL: env.AuthURL(), Username: sv.Username,
		Password: sv.Password, ProjectName: sv.Project, RegionName: env.Region(),
		ValidInterfaces: "public"}
	c := mustNew(t, svc)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, want := c.Endpoint(), env.NeutronURL(); got != want {
		t.Errorf("endpoint from the catalog %s, want %s", got, want)
	}
	bad := svc
	bad.Password = "not-the-password"
	if err := mustNew(t, bad).Check(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Check with a wrong password = %v, want ErrUnauthorized", err)
	}

	aliceS, bobS := env.Login(t, realneutron.Alice), env.Login(t, realneutron.Bob)
	alice, bob := aliceS.ProjectID, bobS.ProjectID
	prov := env.Provider()
	provNet := prov.NetworkID

	// The shared provider network, and a network of bob's project only.
	n, err := c.Network(ctx, provNet)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Shared || n.NetworkType != "flat" || n.PhysicalNetwork != env.Physnet() || len(n.Subnets) == 0 {
		t.Errorf("provider network %+v", n)
	}
	sub, err := c.Subnet(ctx, prov.SubnetID)
	if err != nil || sub.CIDR != prov.CIDR || sub.NetworkID != provNet {
		t.Fatalf("provider subnet %+v, %v", sub, err)
	}
	admin := env.Login(t, realneutron.Admin)
	asc := admin.Network
	seg := 100 + int(randomMAC(t)[15]%90)
	var bobNet Network
	err = networks.Create(ctx, asc, provider.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "bob-private-" + t.Name(),
		ProjectID: bob}, Segments: []provider.Segment{{NetworkType: "vlan", PhysicalNetwork: env.Physnet(),
		SegmentationID: seg}}}).ExtractIntoStructPtr(&bobNet, "network")
	if err != nil {
		t.Fatalf("creating bob's network (VLAN %d): %v", seg, err)
	}
	admin.DeleteNetworkOnCleanup(t, bobNet.ID)
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
	admin.DeletePortOnCleanup(t, p.ID)
	if p.ProjectID != alice || p.DeviceID != server || p.HostID != node || p.VNICType != VNICBaremetal ||
		p.MACAddress != mac || p.Description != CreatedByCorral || len(p.FixedIPs) != 1 || p.FixedIPs[0].IPAddress != ip {
		t.Errorf("port %+v", p)
	}
	if p.VIFType != "binding_failed" && p.VIFType != "other" {
		t.Errorf("vif_type %q: with a host, the port is bound or binding_failed", p.VIFType)
	}
	// Alice sees her port with her own token; bob does not.
	if _, err := ports.Get(ctx, aliceS.Network, p.ID).Extract(); err != nil {
		t.Errorf("alice reading her port: %v", err)
	}
	if _, err := ports.Get(ctx, bobS.Network, p.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
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
