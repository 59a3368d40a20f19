package vmrecord_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/computetest"
	"github.com/corral-dev/corral/compute/vmrecord"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
)

const (
	netA     = "0a000000-0000-4000-8000-00000000000a"
	serverID = "10000000-0000-4000-9000-000000000001"
)

// vmWorld runs hypervisor host hv1's manager over the VM record driver,
// whose VMs get ports on nt (nil: no Neutron).
func vmWorld(t *testing.T, nt serverports.Neutron) (*computetest.Cluster, *vmrecord.Driver) {
	t.Helper()
	var cfg vmrecord.Config
	if nt != nil {
		p, err := serverports.New(nt, serverports.Config{VNICType: neutron.VNICNormal, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Ports = p
	}
	d := vmrecord.New(cfg)
	c := computetest.New(t, fsm.KindHypervisor, "hv1")
	c.Run(t, compute.Config{}, d)
	return c, d
}

// A VM on a hypervisor host gets a Neutron port per requested network,
// with vnic type normal and the host as binding:host_id (no Ironic VIF),
// created, recorded and attached after its intents, its address the
// server's; the delete deletes it.
func TestVMPortsOfABuildAndItsDelete(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	c, d := vmWorld(t, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "hv1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}}})
	c.WaitStatus(t, serverID, fsm.StatusActive, 10*time.Second)
	ps := nt.OfDevice(serverID)
	if len(ps) != 1 {
		t.Fatalf("ports of the VM %+v, want one", ps)
	}
	p := ps[0]
	if p.VNICType != neutron.VNICNormal || p.HostID != "hv1" || p.DeviceOwner != serverports.DeviceOwner || p.ProjectID != "p1" ||
		p.Description != neutron.CreatedByCorral || p.NetworkID != netA {
		t.Errorf("the VM's port %+v: want vnic normal, host hv1, %s, project p1, corral's", p, serverports.DeviceOwner)
	}
	rec := c.Store().ServerNet(serverID)
	if len(rec.Ports) != 1 || rec.Ports[0].ID != p.ID || rec.Ports[0].NetworkName != "tenant" || rec.Ports[0].FixedIPs[0].Address != p.FixedIPs[0].IPAddress {
		t.Errorf("recorded %+v", rec.Ports)
	}
	if got := c.PortIntents(); len(got) != 2 || got[0] != "create "+netA || got[1] != "attach "+p.ID {
		t.Errorf("intents %q", got)
	}
	if vms := d.VMs(); len(vms) != 1 || len(vms[0].Ports) != 1 || vms[0].Ports[0] != p.ID {
		t.Errorf("VMs %+v, want the one with its port", vms)
	}
	c.Must(t, &fsm.DeleteServer{ID: serverID})
	c.WaitStatus(t, serverID, fsm.StatusDeleted, 10*time.Second)
	if ps := nt.All(); len(ps) != 0 {
		t.Errorf("ports after the delete: %+v", ps)
	}
	if len(d.VMs()) != 0 {
		t.Errorf("VMs after the delete: %+v", d.VMs())
	}
}

// A VM build that ends in ERROR (its network gone from Neutron) gives
// back what ports it had made.
func TestVMFailedBuildGivesBackItsPorts(t *testing.T) {
	const netB = "0a000000-0000-4000-8000-00000000000b"
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	c, _ := vmWorld(t, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "hv1",
		Networks: []fsm.Network{{UUID: netA}, {UUID: netB}}})
	s := c.WaitStatus(t, serverID, fsm.StatusError, 10*time.Second)
	if s.Fault == nil {
		t.Fatal("no fault")
	}
	if nt.Created() != 1 || len(nt.All()) != 0 || len(c.Store().ServerNet(serverID).Ports) != 0 {
		t.Errorf("%d created, left %+v, recorded %+v; want the one made deleted", nt.Created(), nt.All(), c.Store().ServerNet(serverID).Ports)
	}
}

// Without Neutron a VM is recorded with its networks and gets no port.
func TestVMWithoutNeutron(t *testing.T) {
	c, d := vmWorld(t, nil)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "hv1", Networks: []fsm.Network{{UUID: netA}}})
	c.WaitStatus(t, serverID, fsm.StatusActive, 10*time.Second)
	if vms := d.VMs(); len(vms) != 1 || len(vms[0].Networks) != 1 || len(vms[0].Ports) != 0 {
		t.Errorf("VMs %+v", vms)
	}
	if rec := c.Store().ServerNet(serverID); len(rec.Ports) != 0 || rec.Intent != nil {
		t.Errorf("recorded %+v", rec)
	}
}
