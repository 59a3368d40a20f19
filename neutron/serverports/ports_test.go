package serverports_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/computetest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
	"github.com/corral-dev/corral/testkit"
)

func newLocal(t *testing.T) *computetest.Cluster {
	t.Helper()
	return computetest.New(t, fsm.KindHypervisor, "h1", "h2")
}

// vm is a virt driver that only gives its servers ports, bound to its
// host, as a hypervisor's driver does.
type vm struct{ ports *serverports.Ports }

func (vm) Kind() string { return fsm.KindHypervisor }

func (v vm) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	ids, err := v.ports.Ensure(ctx, h, s, h.Host())
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := v.ports.Attach(ctx, h, s, id, h.Host(), nil); err != nil {
			return err
		}
	}
	return nil
}

func (v vm) Delete(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	return v.ports.Release(ctx, h, s)
}

// run runs h1's manager with ports of vnic type normal on nt.
func run(t *testing.T, c *computetest.Cluster, nt *neutrontest.Neutron) {
	t.Helper()
	p, err := serverports.New(nt, serverports.Config{VNICType: neutron.VNICNormal, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(t, compute.Config{IntentLease: 500 * time.Millisecond}, vm{ports: p})
}

func waitStatus(t *testing.T, c *computetest.Cluster, id string, want fsm.ServerStatus) fsm.Server {
	t.Helper()
	return c.WaitStatus(t, id, want, 10*time.Second)
}

const (
	netA     = "0a000000-0000-4000-8000-00000000000a"
	serverID = "10000000-0000-4000-9000-000000000001"
)

// A build gives each requested network a port: one created in the
// server's project (device the server, owner compute:nova, the host's
// vnic type, then bound to the host), the user's taken over; each is
// recorded with its network's name and addresses, every step after its
// intent. The delete deletes the created port and gives the user's back.
func TestPortsOfABuildAndItsDelete(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	hers := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1", Description: "my port"})
	c := newLocal(t)
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {Port: hers.ID}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	ports := nt.OfDevice(serverID)
	if len(ports) != 2 || nt.Created() != 1 {
		t.Fatalf("ports of the server %+v (%d created), want the created one and hers", ports, nt.Created())
	}
	var made neutron.Port
	for _, p := range ports {
		if p.DeviceOwner != serverports.DeviceOwner || p.VNICType != neutron.VNICNormal || p.HostID != "h1" {
			t.Errorf("port %+v: want owner %s, vnic normal, host h1", p, serverports.DeviceOwner)
		}
		if p.ID != hers.ID {
			made = p
		}
	}
	if made.ProjectID != "p1" || made.NetworkID != netA {
		t.Errorf("created port %+v, want project p1 on %s", made, netA)
	}
	// corral's mark is on the port it made, from its create on; hers
	// keeps her description (a reaper of corral's ports never takes it).
	if made.Description != neutron.CreatedByCorral {
		t.Errorf("created port's description %q, want %q", made.Description, neutron.CreatedByCorral)
	}
	if p, _ := nt.Get(hers.ID); p.Description != "my port" {
		t.Errorf("her port's description %q, want hers", p.Description)
	}
	rec := c.Store().ServerNet(serverID)
	// Both in the project's default security group, Neutron's choice.
	def := []fsm.SecurityGroupRef{{ID: "sg-default-p1", Name: "default"}}
	want := []fsm.ServerPort{
		{ID: made.ID, NetworkID: netA, NetworkName: "tenant", MAC: made.MACAddress, FixedIPs: []fsm.PortIP{{Address: made.FixedIPs[0].IPAddress, Version: 4}},
			SecurityGroups: def, GroupsKnown: true},
		{ID: hers.ID, NetworkID: netA, NetworkName: "tenant", MAC: hers.MACAddress, FixedIPs: []fsm.PortIP{{Address: hers.FixedIPs[0].IPAddress, Version: 4}}, User: true,
			SecurityGroups: def, GroupsKnown: true},
	}
	if fmt.Sprint(rec.Ports) != fmt.Sprint(want) {
		t.Fatalf("recorded\n %+v\nwant\n %+v", rec.Ports, want)
	}
	if got, want := c.PortIntents(), []string{"create " + netA, "bind " + hers.ID, "attach " + made.ID, "attach " + hers.ID}; !slices.Equal(got, want) {
		t.Errorf("intents %q, want %q", got, want)
	}

	c.Must(t, &fsm.DeleteServer{ID: serverID})
	waitStatus(t, c, serverID, fsm.StatusDeleted)
	if _, ok := nt.Get(made.ID); ok {
		t.Error("the created port outlives the server")
	}
	if kept, ok := nt.Get(hers.ID); !ok || kept.DeviceID != "" || kept.DeviceOwner != "" || kept.HostID != "" || kept.MACAddress != hers.MACAddress {
		t.Errorf("her port %+v (%v), want kept and unbound, with its MAC (a VM's port is no NIC's)", kept, ok)
	}
	if got := c.PortIntents()[4:]; !slices.Equal(got, []string{"delete " + made.ID, "unbind " + hers.ID}) {
		t.Errorf("release intents %q", got)
	}
}

// A port an earlier attempt created and did not record is found by its
// device and used: no second port.
func TestPortOfAnEarlierAttemptIsResumed(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	earlier := nt.Add(neutron.PortCreate{NetworkID: netA, DeviceID: serverID, DeviceOwner: serverports.DeviceOwner})
	c := newLocal(t)
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", Networks: []fsm.Network{{UUID: netA}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	if ps := nt.OfDevice(serverID); len(ps) != 1 || ps[0].ID != earlier.ID || nt.Created() != 0 {
		t.Fatalf("ports %+v, %d created; want only the earlier one", ps, nt.Created())
	}
	if rec := c.Store().ServerNet(serverID); len(rec.Ports) != 1 || rec.Ports[0].ID != earlier.ID {
		t.Fatalf("recorded %+v", rec.Ports)
	}
}

// A create Neutron answers long after the intent's lease (a busy Neutron
// queues it) is waited for: the lease bounds when the request is sent, not
// when Neutron answers, which carries it out either way. Giving up on the
// answer at the lease made the build create again, and the first create
// left a second port of the server behind.
func TestSlowCreateMakesOnePort(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	nt.Slow = 2 * time.Second // four leases of run's
	c := newLocal(t)
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", Networks: []fsm.Network{{UUID: netA}}})
	c.WaitStatus(t, serverID, fsm.StatusActive, 30*time.Second)
	testkit.Eventually(t, 30*time.Second, func() error {
		if n := nt.InFlight(); n > 0 {
			return fmt.Errorf("%d creates still in Neutron's queue", n)
		}
		return nil
	})
	ps := nt.OfDevice(serverID)
	if len(ps) != 1 || nt.Created() != 1 {
		t.Fatalf("ports of the server %+v, %d created; want one", ps, nt.Created())
	}
	if rec := c.Store().ServerNet(serverID); len(rec.Ports) != 1 || rec.Ports[0].ID != ps[0].ID {
		t.Fatalf("recorded %+v, want %s", rec.Ports, ps[0].ID)
	}
}

// A create whose intent is refused (the host lost the server, as the
// log says) is not sent, on any attempt.
func TestRefusedIntentCreatesNothing(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	c := newLocal(t)
	c.Refuse = func(cmd fsm.Command) error {
		if in, ok := cmd.(*fsm.SetPortIntent); ok && in.Step == fsm.PortStepCreate {
			return fmt.Errorf("%w: server moved", fsm.ErrFenced)
		}
		return nil
	}
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", Networks: []fsm.Network{{UUID: netA}}})
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := c.Refused(); n < 2 {
			return fmt.Errorf("%d create intents refused, want 2 attempts", n)
		}
		return nil
	})
	if n := nt.Created(); n != 0 {
		t.Fatalf("%d ports created under refused intents", n)
	}
	if s, _ := c.Store().Server(serverID); s.Status != fsm.StatusBuild {
		t.Fatalf("server %s, want still BUILD", s.Status)
	}
}

// A network asked for with a fixed address gets a port with that
// address. One outside the network's subnets ends the build in ERROR
// with the fault Nova's build gives (its InvalidInput, the build
// aborted), one another port took since the API checked it with Nova's
// "Fixed IP ... is already in use.".
func TestFixedIPOfABuild(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	taken := nt.Add(neutron.PortCreate{NetworkID: netA, FixedIPs: []neutron.FixedIP{{IPAddress: "192.0.2.78"}}})
	c := newLocal(t)
	run(t, c, nt)
	ids := []string{"10000000-0000-4000-9000-000000000011", "10000000-0000-4000-9000-000000000012", "10000000-0000-4000-9000-000000000013"}
	for i, ip := range []string{"192.0.2.77", "10.9.9.9", taken.FixedIPs[0].IPAddress} {
		c.Must(t, &fsm.CreateServer{ID: ids[i], Name: "vm", FlavorID: "f1", ImageRef: "img", Host: "h1",
			Networks: []fsm.Network{{UUID: netA, FixedIP: ip}}})
	}
	waitStatus(t, c, ids[0], fsm.StatusActive)
	if ps := nt.OfDevice(ids[0]); len(ps) != 1 || len(ps[0].FixedIPs) != 1 || ps[0].FixedIPs[0].IPAddress != "192.0.2.77" {
		t.Fatalf("ports %+v, want one with 192.0.2.77", ps)
	}
	if rec := c.Store().ServerNet(ids[0]); len(rec.Ports) != 1 || rec.Ports[0].FixedIPs[0].Address != "192.0.2.77" {
		t.Fatalf("recorded %+v", rec.Ports)
	}
	for i, want := range map[int]string{
		1: "Build of instance " + ids[1] + " aborted: Invalid input received: Fixed IP 10.9.9.9 is not a valid ip address for network " + netA + ".",
		2: "Fixed IP 192.0.2.78 is already in use.",
	} {
		s := waitStatus(t, c, ids[i], fsm.StatusError)
		if s.Fault == nil || s.Fault.Message != want {
			t.Errorf("fault %+v, want %q", s.Fault, want)
		}
	}
}
