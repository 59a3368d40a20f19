package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/serverports"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/realneutron"
)

// serviceNeutron is corral's Neutron client as its service user.
func serviceNeutron(t *testing.T, env *realneutron.Env) *neutron.Client {
	t.Helper()
	sv := env.User(realneutron.Service)
	nc, err := neutron.New(neutron.Options{AuthType: neutron.AuthPassword, AuthURL: env.AuthURL(),
		Username: sv.Username, Password: sv.Password, ProjectName: sv.Project,
		RegionName: env.Region(), ValidInterfaces: "public"})
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// Against the real Neutron of scripts/neutron-up.sh (Ironic simulated): a
// boot of alice's on the provider network and with a port of her own gets
// a port made by corral's service user in her project, with the server as
// device, compute:nova, baremetal and the node as host, and her port
// taken over; the server's addresses are the port's; the delete leaves
// no port corral made and hands her port back unbound.
func TestRealNeutronPortsOfABoot(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's Neutron ports")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nc := serviceNeutron(t, env)
	if err := nc.Check(ctx); err != nil {
		t.Fatal(err)
	}
	alice := env.Login(t, realneutron.Alice).ProjectID
	provNet, cidr := env.Provider().NetworkID, netip.MustParsePrefix(env.Provider().CIDR)
	hers, err := nc.CreatePort(ctx, neutron.PortCreate{NetworkID: provNet, ProjectID: alice, Name: "alice-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.DeletePort(context.Background(), hers.ID) })

	w := newWorldCfg(t, 1, sim.Options{}, nil, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second,
		Neutron: nc}, compute.Config{})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := uuid.NewString()
	t.Cleanup(func() {
		// Whatever the test left: no port of this server stays.
		if ps, err := nc.Ports(context.Background(), neutron.PortFilter{DeviceID: id}); err == nil {
			for _, p := range ps {
				if p.ID != hers.ID {
					_ = nc.DeletePort(context.Background(), p.ID)
				}
			}
		}
	})
	nets := []fsm.Network{{UUID: provNet}, {Port: hers.ID}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "real", FlavorID: "gold", ImageRef: "img", Networks: nets, ProjectID: alice}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: id})
	if err != nil || len(ps) != 2 {
		t.Fatalf("ports of the server: %+v, %v; want 2", ps, err)
	}
	var made neutron.Port
	for _, p := range ps {
		if p.DeviceOwner != serverports.DeviceOwner || p.VNICType != neutron.VNICBaremetal || p.HostID != s.NodeUUID || p.ProjectID != alice {
			t.Errorf("port %+v: want %s, baremetal, host %s, project %s", p, serverports.DeviceOwner, s.NodeUUID, alice)
		}
		if p.ID != hers.ID {
			made = p
		}
	}
	if made.Description != neutron.CreatedByCorral {
		t.Errorf("the port corral made has description %q, want %q", made.Description, neutron.CreatedByCorral)
	}
	if p, err := nc.Port(ctx, hers.ID); err != nil || p.Description != "" {
		t.Errorf("alice's port's description %q (%v), want hers (none)", p.Description, err)
	}
	rec := w.leader().Node.Store().ServerNet(id)
	if len(rec.Ports) != 2 || rec.Ports[0].ID != made.ID || rec.Ports[1].ID != hers.ID || !rec.Ports[1].User {
		t.Fatalf("recorded %+v", rec.Ports)
	}
	for _, p := range rec.Ports {
		if p.NetworkName != env.Provider().Name || len(p.FixedIPs) != 1 || !cidr.Contains(netip.MustParseAddr(p.FixedIPs[0].Address)) || p.MAC == "" {
			t.Errorf("recorded port %+v: want an address in %s on %s", p, cidr, env.Provider().Name)
		}
	}

	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	if _, err := nc.Port(ctx, made.ID); !errors.Is(err, neutron.ErrNotFound) {
		t.Errorf("the port corral made: %v, want it deleted", err)
	}
	kept, err := nc.Port(ctx, hers.ID)
	if err != nil || kept.DeviceID != "" || kept.DeviceOwner != "" || kept.HostID != "" {
		t.Errorf("alice's port %+v (%v), want kept and unbound", kept, err)
	}
	if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: id}); err != nil || len(ps) != 0 {
		t.Errorf("ports of the deleted server: %+v, %v", ps, err)
	}
}

// waitStatusWithin is waitStatus with a longer wait: the shared real
// Neutron answers slowly while other work binds ports on it.
func (w *world) waitStatusWithin(id string, want fsm.ServerStatus, d time.Duration) fsm.Server {
	w.t.Helper()
	var s fsm.Server
	testkit.Eventually(w.t, d, func() error {
		var err error
		if s, err = w.leader().Node.Store().Server(id); err != nil {
			return err
		}
		if s.Status != want || s.TaskState != "" {
			return fmt.Errorf("server %s is %s/%s, want %s", id, s.Status, s.TaskState, want)
		}
		return nil
	})
	return s
}

// realWorld is a one-peer world with n simulated nodes whose driver gives
// servers ports on the real Neutron, and that Neutron's client.
func realWorld(t *testing.T, env *realneutron.Env, nodes int, wrap func(driver.Ironic) driver.Ironic) (*world, *neutron.Client) {
	t.Helper()
	nc := serviceNeutron(t, env)
	w := newWorldCfg(t, 1, sim.Options{}, wrap, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second,
		Neutron: nc}, compute.Config{})
	w.sim.SeedNodes(nodes, "baremetal-gold")
	w.waitMirror(nodes)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	return w, nc
}

// cleanupPortsOf deletes, when the test ends, whatever port Neutron still
// lists with one of ids as its device, but keep.
func cleanupPortsOf(t *testing.T, nc *neutron.Client, keep string, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			if ps, err := nc.Ports(context.Background(), neutron.PortFilter{DeviceID: id}); err == nil {
				for _, p := range ps {
					if p.ID != keep {
						_ = nc.DeletePort(context.Background(), p.ID)
					}
				}
			}
		}
	})
}

// Against the real Neutron: a fixed address is the port's; one outside
// the network's subnets and one already taken end their builds in ERROR
// with Nova's faults, and leave no port.
func TestRealNeutronFixedIP(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's Neutron ports")
	w, nc := realWorld(t, env, 3, nil)
	ctx := context.Background()
	provNet, cidr := env.Provider().NetworkID, netip.MustParsePrefix(env.Provider().CIDR)
	var free string
	for i := 150 + time.Now().Nanosecond()%90; free == ""; i++ {
		a := cidr.Addr().As4()
		ip := netip.AddrFrom4([4]byte{a[0], a[1], a[2], byte(i)}).String()
		if ps, err := nc.Ports(ctx, neutron.PortFilter{NetworkID: provNet, FixedIP: ip}); err == nil && len(ps) == 0 {
			free = ip
		}
	}
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	cleanupPortsOf(t, nc, "", ids...)
	if err := w.propose(&fsm.CreateServer{ID: ids[0], Name: "fixed", FlavorID: "gold", ImageRef: "img",
		Networks: []fsm.Network{{UUID: provNet, FixedIP: free}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(ids[0], fsm.StatusActive, 2*time.Minute)
	if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: ids[0]}); err != nil || len(ps) != 1 || len(ps[0].FixedIPs) != 1 ||
		ps[0].FixedIPs[0].IPAddress != free {
		t.Fatalf("ports of the server %+v, %v; want one with %s", ps, err, free)
	}
	for i, ip := range map[int]string{1: "10.9.9.9", 2: free} {
		if err := w.propose(&fsm.CreateServer{ID: ids[i], Name: "fixed", FlavorID: "gold", ImageRef: "img",
			Networks: []fsm.Network{{UUID: provNet, FixedIP: ip}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range map[int]string{
		1: "Build of instance " + ids[1] + " aborted: Invalid input received: Fixed IP 10.9.9.9 is not a valid ip address for network " + provNet + ".",
		2: "Fixed IP " + free + " is already in use.",
	} {
		s := w.waitStatusWithin(ids[i], fsm.StatusError, 2*time.Minute)
		if s.Fault == nil || s.Fault.Message != want {
			t.Errorf("fault %+v, want %q", s.Fault, want)
		}
		if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: ids[i]}); err != nil || len(ps) != 0 {
			t.Errorf("ports of the failed build: %+v, %v", ps, err)
		}
	}
}

// Against the real Neutron (Ironic simulated, playing its part in Neutron:
// the NIC's MAC put on a port at its VIF attach, left there by a detach,
// as on a node that is not active): alice's port, given back after a
// server on a node, has a new MAC, so the next server on that node and
// network gets its port with the NIC's MAC instead of Neutron's 409.
func TestRealNeutronUserPortGivenBackWithANewMAC(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's Neutron ports")
	var nc *neutron.Client
	wrap := withNICs(func(ctx context.Context, port, mac string) error {
		_, err := nc.UpdatePort(ctx, port, neutron.PortUpdate{MACAddress: &mac})
		return err
	})
	w, c := realWorld(t, env, 1, wrap)
	nc = c
	ctx := context.Background()
	provNet := env.Provider().NetworkID
	alice := env.Login(t, realneutron.Alice).ProjectID
	hers, err := nc.CreatePort(ctx, neutron.PortCreate{NetworkID: provNet, ProjectID: alice, Name: "alice-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.DeletePort(context.Background(), hers.ID) })
	first, next := uuid.NewString(), uuid.NewString()
	cleanupPortsOf(t, nc, hers.ID, first, next)
	if err := w.propose(&fsm.CreateServer{ID: first, Name: "first", FlavorID: "gold", ImageRef: "img", ProjectID: alice,
		Networks: []fsm.Network{{Port: hers.ID}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(first, fsm.StatusActive, 2*time.Minute)
	const nic = "52:54:00:aa:00:01"
	if p, err := nc.Port(ctx, hers.ID); err != nil || p.MACAddress != nic {
		t.Fatalf("her port %+v (%v), want the NIC's MAC %s", p, err, nic)
	}
	if err := w.propose(&fsm.DeleteServer{ID: first}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(first, fsm.StatusDeleted, 2*time.Minute)
	if p, err := nc.Port(ctx, hers.ID); err != nil || p.DeviceID != "" || p.MACAddress == nic || !strings.HasPrefix(p.MACAddress, "fa:16:3e:") {
		t.Fatalf("her port given back %+v (%v): want unbound, with a MAC of Neutron's", p, err)
	}
	if err := w.propose(&fsm.CreateServer{ID: next, Name: "next", FlavorID: "gold", ImageRef: "img", ProjectID: alice,
		Networks: []fsm.Network{{UUID: provNet}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(next, fsm.StatusActive, 2*time.Minute)
	if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: next}); err != nil || len(ps) != 1 || ps[0].MACAddress != nic {
		t.Fatalf("ports of the next server %+v (%v), want one with the NIC's MAC", ps, err)
	}
}

// Against the real Neutron: a build that ends in ERROR (Ironic refuses the
// deploy once the VIFs are attached) gives back its ports before the
// ERROR: the port corral made deleted, alice's unbound with a MAC of
// Neutron's.
func TestRealNeutronFailedBuildGivesBackItsPorts(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's Neutron ports")
	var nc *neutron.Client
	nics := withNICs(func(ctx context.Context, port, mac string) error {
		_, err := nc.UpdatePort(ctx, port, neutron.PortUpdate{MACAddress: &mac})
		return err
	})
	w, c := realWorld(t, env, 1, func(inner driver.Ironic) driver.Ironic { return refusing{nics(inner)} })
	nc = c
	ctx := context.Background()
	provNet := env.Provider().NetworkID
	alice := env.Login(t, realneutron.Alice).ProjectID
	hers, err := nc.CreatePort(ctx, neutron.PortCreate{NetworkID: provNet, ProjectID: alice, Name: "alice-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.DeletePort(context.Background(), hers.ID) })
	id := uuid.NewString()
	cleanupPortsOf(t, nc, hers.ID, id)
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "failing", FlavorID: "gold", ImageRef: "img", ProjectID: alice,
		Networks: []fsm.Network{{UUID: provNet}, {Port: hers.ID}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatusWithin(id, fsm.StatusError, 2*time.Minute)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "Ironic refused to deploy") {
		t.Fatalf("fault %+v", s.Fault)
	}
	if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: id}); err != nil || len(ps) != 0 {
		t.Errorf("ports of the failed server: %+v, %v", ps, err)
	}
	if p, err := nc.Port(ctx, hers.ID); err != nil || p.DeviceID != "" || p.HostID != "" || !strings.HasPrefix(p.MACAddress, "fa:16:3e:") {
		t.Errorf("alice's port %+v (%v), want unbound, with a MAC of Neutron's", p, err)
	}
}

// Against the real Neutron (Ironic simulated, its node of the flat
// network interface with two ports): an interface attached to an ACTIVE
// server on the provider network is a port corral makes in the server's
// project, bound to the node, attached as a VIF; its detach deletes it.
func TestRealNeutronInterfaceAttachAndDetach(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's Neutron ports")
	nc := serviceNeutron(t, env)
	w := flatWorld(t, nc, 2)
	ctx := context.Background()
	provNet := env.Provider().NetworkID
	alice := env.Login(t, realneutron.Alice).ProjectID
	id := uuid.NewString()
	cleanupPortsOf(t, nc, "", id)
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "iface", FlavorID: "gold", ImageRef: "img", ProjectID: alice,
		Networks: []fsm.Network{{UUID: provNet}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatusWithin(id, fsm.StatusActive, 2*time.Minute)
	in := w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionAttachInterface, NetworkID: provNet})
	p, err := nc.Port(ctx, in.PortID)
	if in.Fault != "" || err != nil || p.DeviceID != id || p.HostID != s.NodeUUID || p.ProjectID != alice ||
		p.Description != neutron.CreatedByCorral || p.VNICType != neutron.VNICBaremetal {
		t.Fatalf("attached %+v: port %+v (%v)", in, p, err)
	}
	if v := w.sim.Nodes()[0].VIFs; !slices.Contains(v, p.ID) || len(v) != 2 {
		t.Fatalf("node VIFs %v, want the boot's and %s", v, p.ID)
	}
	in = w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionDetachInterface, PortID: p.ID})
	if _, err := nc.Port(ctx, p.ID); in.Fault != "" || !errors.Is(err, neutron.ErrNotFound) {
		t.Fatalf("detached %+v: the port %v, want deleted", in, err)
	}
	if ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: id}); err != nil || len(ps) != 1 {
		t.Fatalf("ports of the server after the detach %+v, %v; want the boot's", ps, err)
	}
}
