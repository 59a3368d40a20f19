package neutron

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/provider"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

// concurrent is how many servers boot at once on one network.
const concurrent = 20

// TestNeutron boots and deletes alice's bare-metal servers on the real
// Neutron, through three agents: with a network, with a port of hers and
// with a fixed IP; with an owner killed mid-deploy; and 20 at once. One
// cluster and one set of nodes serve the steps in turn.
func TestNeutron(t *testing.T) {
	began := time.Now()
	f := start(t, concurrent)
	t.Run("boot", f.testBoot)
	t.Run("owner-killed-mid-deploy", f.testOwnerKilled)
	t.Run("concurrent", f.testConcurrent)
	t.Logf("TestNeutron: %s in all", time.Since(began).Round(time.Second))
}

// testBoot: a server on the provider network gets a port corral creates,
// one with alice's port takes hers over, one with a fixed IP gets that IP;
// each port is the server's, bound to its node, attached in Ironic, and
// the server shows its address. The deletes leave no port corral created,
// no VIF, and alice's port unbound, with a MAC no longer the NIC's.
func (f *fixture) testBoot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prov := f.env.Provider()
	hers, err := ports.Create(ctx, f.alice.Network, ports.CreateOpts{NetworkID: prov.NetworkID, Name: "e2e-alice-" + f.ir.Env.Prefix}).Extract()
	if err != nil {
		t.Fatalf("alice's port: %v", err)
	}
	f.admin.DeletePortOnCleanup(t, hers.ID)

	f.awaitNodes(t)
	var booted []string
	f.purgeOnCleanup(t, &booted)
	began := time.Now()
	idNet := f.mustBoot("net", servers.Network{UUID: prov.NetworkID})
	idPort := f.mustBoot("port", servers.Network{Port: hers.ID})
	booted = append(booted, idNet, idPort)
	// The fixed IP is chosen once the other boot's port has its address,
	// so that no concurrent create takes it.
	testkit.Eventually(t, 2*time.Minute, func() error {
		ps, err := f.portsOf(ctx, idNet)
		if err == nil && len(ps) == 0 {
			err = fmt.Errorf("server %s has no port yet", idNet)
		}
		return err
	})
	fixed := f.freeIP(t, prov.NetworkID, prov.CIDR)
	idFixed := f.mustBoot("fixed", servers.Network{UUID: prov.NetworkID, FixedIP: fixed})
	booted = append(booted, idFixed)
	got := f.active(t, []string{idNet, idPort, idFixed}, 3*time.Minute)
	t.Logf("3 servers ACTIVE in %s", time.Since(began).Round(time.Millisecond))

	nodes := map[string]string{}
	made := map[string]string{}
	for _, id := range []string{idNet, idPort, idFixed} {
		nodes[id] = f.placement(t, id).Node
	}
	t.Run("network", func(t *testing.T) {
		made[idNet] = f.checkPort(t, got[idNet], prov.NetworkID, prov.Name).ID
	})
	t.Run("port", func(t *testing.T) {
		if p := f.checkPort(t, got[idPort], prov.NetworkID, prov.Name); p.ID != hers.ID {
			t.Errorf("server %s runs on port %s, not on alice's %s", idPort, p.ID, hers.ID)
		}
	})
	t.Run("fixed_ip", func(t *testing.T) {
		p := f.checkPort(t, got[idFixed], prov.NetworkID, prov.Name)
		made[idFixed] = p.ID
		if firstIP(p) != fixed {
			t.Errorf("server %s booted with fixed_ip %s has port %s with %v", idFixed, fixed, p.ID, p.FixedIPs)
		}
	})

	began = time.Now()
	f.remove(t, []string{idNet, idPort, idFixed}, 3*time.Minute)
	t.Logf("3 servers deleted in %s", time.Since(began).Round(time.Millisecond))
	f.checkReleased(t, idNet, nodes[idNet], made[idNet])
	f.checkReleased(t, idFixed, nodes[idFixed], made[idFixed])
	f.checkReleased(t, idPort, nodes[idPort])
	switch p := f.getPort(t, hers.ID); {
	case p == nil:
		t.Errorf("alice's port %s was deleted with the server", hers.ID)
	case p.DeviceID != "" || p.DeviceOwner != "" || p.HostID != "" || p.ProjectID != f.alice.ProjectID:
		t.Errorf("alice's port after the delete: device %q owner %q host %q project %q, want unbound and hers",
			p.DeviceID, p.DeviceOwner, p.HostID, p.ProjectID)
	case strings.EqualFold(p.MACAddress, f.nics[nodes[idPort]].MAC):
		// Detached from a node that was not active, a port keeps the
		// NIC's MAC, and no other port on the network can take it.
		t.Errorf("alice's port keeps the MAC %s of node %s's NIC after the delete", p.MACAddress, nodes[idPort])
	}
}

// freeIP picks an address of the subnet no port on the network has.
func (f *fixture) freeIP(t *testing.T, network, cidr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := f.listPorts(ctx, ports.ListOpts{NetworkID: network})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			used[ip.IPAddress] = true
		}
	}
	pfx := netip.MustParsePrefix(cidr)
	base := pfx.Addr().As4()
	for range 1000 {
		n, _ := rand.Int(rand.Reader, big.NewInt(100))
		b := base
		b[3] = byte(100 + n.Int64())
		if a := netip.AddrFrom4(b); pfx.Contains(a) && !used[a.String()] {
			return a.String()
		}
	}
	t.Fatalf("no free address in %s", cidr)
	return ""
}

// testOwnerKilled: every agent's port creates are answered late; a
// non-leader agent whose create Neutron has carried out (the port exists,
// with the server as device, unrecorded in corral) is killed with
// SIGKILL. The new owner finishes the build with that port: one port per
// server, the one the dead owner created, attached in Ironic. The killed
// agent stays down: the next step runs on the two others.
func (f *fixture) testOwnerKilled(t *testing.T) {
	prov := f.env.Provider()
	f.awaitNodes(t)
	leader := f.c.Leader(30 * time.Second)
	for _, p := range f.proxies {
		p.hold(true)
	}
	t.Cleanup(func() {
		for _, p := range f.proxies {
			p.hold(false)
		}
	})
	ids := make([]string, hosts)
	f.purgeOnCleanup(t, &ids)
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for i, a := range f.c.Agents {
		wg.Go(func() {
			ids[i], errs[i] = f.boot(a, fmt.Sprintf("kill-%d", i), []servers.Network{{UUID: prov.NetworkID}})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var victim *e2e.Agent
	var vproxy *proxy
	var server string
	testkit.Eventually(t, 2*time.Minute, func() error {
		for i, a := range f.c.Agents {
			if a == leader {
				continue
			}
			if held := f.proxies[i].heldDevices(); len(held) > 0 {
				victim, vproxy, server = a, f.proxies[i], held[0]
				return nil
			}
		}
		return fmt.Errorf("no agent but the leader %s has created a port yet", leader.Name)
	})
	for _, p := range f.proxies {
		if p != vproxy {
			p.hold(false)
		}
	}
	dead := vproxy.createdFor(server)
	if len(dead) != 1 {
		t.Fatalf("%s created ports %v for server %s, want one", victim.Name, dead, server)
	}
	t.Logf("%s created port %s for server %s; killing %s before it hears of it", victim.Name, dead[0], server, victim.Name)
	victim.Kill()
	vproxy.hold(false)

	began := time.Now()
	got := f.active(t, ids, 3*time.Minute)
	t.Logf("the 3 servers ACTIVE %s after the kill", time.Since(began).Round(time.Millisecond))
	nodes, made := map[string]string{}, map[string]string{}
	for _, id := range ids {
		where := f.placement(t, id)
		nodes[id] = where.Node
		if id == server && where.Host == victim.Name {
			t.Errorf("server %s is still on the killed %s", id, victim.Name)
		}
		// One port each (an owner whose create's answer came too late
		// finds the port by its device), the dead owner's for its server.
		p := f.checkPort(t, got[id], prov.NetworkID, prov.Name)
		made[id] = p.ID
		if id == server && p.ID != dead[0] {
			t.Errorf("server %s runs on port %s, not on %s that its dead owner created", id, p.ID, dead[0])
		}
	}

	f.remove(t, ids, 3*time.Minute)
	for _, id := range ids {
		f.checkReleased(t, id, nodes[id], made[id])
	}
}

// testConcurrent: 20 servers booted at once on a network of alice's
// project each get one port and one VIF; once they are deleted, the
// network's ports are what they were before (one port of alice's,
// untouched).
func (f *fixture) testConcurrent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	network, name := f.aliceNetwork(t)
	bystander, err := ports.Create(ctx, f.alice.Network, ports.CreateOpts{NetworkID: network, Name: "bystander"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	before, err := f.listPorts(ctx, ports.ListOpts{NetworkID: network})
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || before[0].ID != bystander.ID {
		t.Fatalf("ports of the new network: %+v, want alice's one", before)
	}

	f.awaitNodes(t)
	began := time.Now()
	ids := make([]string, concurrent)
	f.purgeOnCleanup(t, &ids)
	errs := make([]error, concurrent)
	var wg sync.WaitGroup
	agents := f.running()
	for i := range concurrent {
		wg.Go(func() {
			ids[i], errs[i] = f.boot(agents[i%len(agents)], fmt.Sprintf("many-%02d", i), []servers.Network{{UUID: network}})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := f.active(t, ids, 10*time.Minute)
	t.Logf("%d servers ACTIVE %s after their boots", concurrent, time.Since(began).Round(time.Millisecond))
	// A create Neutron carried out after corral stopped waiting for its
	// answer (slower than [neutron]'s request timeout, which a busy
	// Neutron on a loaded machine can be) leaves a port of the server
	// that its record does not hold; the leader's reaper deletes it once
	// it has seen it so for port_reap_grace (1 m here). Each server ends
	// with its one port either way.
	strays := map[string]int{} // server → the most ports seen
	testkit.Eventually(t, 3*time.Minute, func() error {
		var extra []string
		for _, id := range ids {
			ps, err := f.portsOf(ctx, id)
			if err != nil {
				return err
			}
			if len(ps) > 1 {
				extra = append(extra, fmt.Sprintf("%s: %d", id, len(ps)))
				strays[id] = max(strays[id], len(ps))
			}
		}
		if len(extra) > 0 {
			return fmt.Errorf("servers with more than one port (waiting for the reaper): %v", extra)
		}
		return nil
	})
	if len(strays) > 0 {
		t.Logf("servers that had more than one port until the reaper came (server: ports): %v", strays)
	}
	nodes, made := map[string]string{}, map[string]string{}
	seen := map[string]string{}
	for _, id := range ids {
		nodes[id] = f.placement(t, id).Node
		p := f.checkPort(t, got[id], network, name)
		if other, ok := seen[p.ID]; ok {
			t.Errorf("servers %s and %s share port %s", other, id, p.ID)
		}
		seen[p.ID], made[id] = id, p.ID
	}

	began = time.Now()
	f.remove(t, ids, 10*time.Minute)
	t.Logf("%d servers deleted in %s", concurrent, time.Since(began).Round(time.Millisecond))
	for _, id := range ids {
		f.checkReleased(t, id, nodes[id], made[id])
	}
	after, err := f.listPorts(ctx, ports.ListOpts{NetworkID: network})
	if err != nil {
		t.Fatal(err)
	}
	if summary(after) != summary(before) {
		t.Errorf("the network's ports after the deletes:\n%s\nbefore the boots:\n%s", summary(after), summary(before))
	}
}

// summary is what a port list shows of each port, sorted.
func summary(ps []port) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s mac=%s ips=%v device=%q owner=%q host=%q project=%s", p.ID, p.MACAddress,
			p.FixedIPs, p.DeviceID, p.DeviceOwner, p.HostID, p.ProjectID))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// aliceNetwork has the admin make a VLAN network on the nodes' physical
// network for alice's project (not shared), with an IPv4 subnet, deleted
// when the test ends. It returns its id and name.
func (f *fixture) aliceNetwork(t *testing.T) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := f.ir.Env.Prefix + "-net"
	var net *networks.Network
	var err error
	for range 10 {
		seg, _ := rand.Int(rand.Reader, big.NewInt(100))
		net, err = networks.Create(ctx, f.admin.Network, provider.CreateOptsExt{
			CreateOptsBuilder: networks.CreateOpts{Name: name, ProjectID: f.alice.ProjectID},
			Segments:          []provider.Segment{{NetworkType: "vlan", PhysicalNetwork: f.env.Physnet(), SegmentationID: 100 + int(seg.Int64())}},
		}).Extract()
		if !gophercloud.ResponseCodeIs(err, 409) {
			break // a 409: the VLAN is taken, try another
		}
	}
	if err != nil {
		t.Fatalf("network %s for alice: %v", name, err)
	}
	f.admin.DeleteNetworkOnCleanup(t, net.ID)
	dhcp := false
	if _, err := subnets.Create(ctx, f.admin.Network, subnets.CreateOpts{NetworkID: net.ID, Name: name + "-v4", IPVersion: 4,
		CIDR: "198.51.100.0/24", EnableDHCP: &dhcp, ProjectID: f.alice.ProjectID}).Extract(); err != nil {
		t.Fatalf("subnet of %s: %v", name, err)
	}
	return net.ID, name
}
