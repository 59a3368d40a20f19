package driver_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit/realneutron"
)

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
	sv := env.User(realneutron.Service)
	nc, err := neutron.New(neutron.Options{AuthType: neutron.AuthPassword, AuthURL: env.AuthURL(),
		Username: sv.Username, Password: sv.Password, ProjectName: sv.Project,
		RegionName: env.Region(), ValidInterfaces: "public"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Check(ctx); err != nil {
		t.Fatal(err)
	}
	admin := env.Login(t, realneutron.Admin)
	alice := env.Login(t, realneutron.Alice).ProjectID
	prov := env.Provider()
	provNet, cidr := prov.NetworkID, netip.MustParsePrefix(prov.CIDR)
	hers, err := nc.CreatePort(ctx, neutron.PortCreate{NetworkID: provNet, ProjectID: alice, Name: "alice-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	admin.DeletePortOnCleanup(t, hers.ID)

	w := newWorldCfg(t, 1, sim.Options{}, nil, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second,
		Neutron: nc}, compute.Config{})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := uuid.NewString()
	// Whatever the test left: no port of this server stays.
	admin.DeleteDevicePortsOnCleanup(t, func() []string { return []string{id} }, hers.ID)
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
		if p.DeviceOwner != driver.DeviceOwner || p.VNICType != neutron.VNICBaremetal || p.HostID != s.NodeUUID || p.ProjectID != alice {
			t.Errorf("port %+v: want %s, baremetal, host %s, project %s", p, driver.DeviceOwner, s.NodeUUID, alice)
		}
		if p.ID != hers.ID {
			made = p
		}
	}
	rec := w.leader().Node.Store().ServerNet(id)
	if len(rec.Ports) != 2 || rec.Ports[0].ID != made.ID || rec.Ports[1].ID != hers.ID || !rec.Ports[1].User {
		t.Fatalf("recorded %+v", rec.Ports)
	}
	for _, p := range rec.Ports {
		if p.NetworkName != prov.Name || len(p.FixedIPs) != 1 || !cidr.Contains(netip.MustParseAddr(p.FixedIPs[0].Address)) || p.MAC == "" {
			t.Errorf("recorded port %+v: want an address in %s on %s", p, cidr, prov.Name)
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
