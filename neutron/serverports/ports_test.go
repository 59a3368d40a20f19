package serverports_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
	"github.com/corral-dev/corral/testkit"
)

// local is a cluster of hosts h1 (whose manager a test runs) and h2 whose
// log is a local store: commands apply at once.
type local struct {
	store *fsm.Store
	mu    sync.Mutex
	idx   uint64
	cmds  []fsm.Command
	// refuse, when set, refuses the commands it returns an error for.
	refuse  func(fsm.Command) error
	refused int
}

func (c *local) Name() string                      { return "h1" }
func (c *local) Store() *fsm.Store                 { return c.store }
func (c *local) IsLeader() bool                    { return true }
func (c *local) CommandKnown(fsm.CommandType) bool { return true }

func (c *local) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse != nil {
		if err := c.refuse(cmd); err != nil {
			c.refused++
			return 0, err
		}
	}
	c.idx++
	if cmd.Header().At.IsZero() {
		cmd.Header().At = time.Date(2026, 12, 1, 0, 0, int(c.idx), 0, time.UTC)
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	c.cmds = append(c.cmds, cmd)
	return c.idx, c.store.Apply(c.idx, data).Err
}

func (c *local) must(t *testing.T, cmd fsm.Command) {
	t.Helper()
	if _, err := c.Propose(context.Background(), cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
}

// intents are the port intents committed, as "step port-or-network".
func (c *local) intents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, cmd := range c.cmds {
		if in, ok := cmd.(*fsm.SetPortIntent); ok {
			out = append(out, in.Step+" "+in.PortID+in.NetworkID)
		}
	}
	return out
}

func newLocal(t *testing.T) *local {
	t.Helper()
	c := &local{store: fsm.New()}
	c.must(t, &fsm.RegisterHost{Name: "h1", RaftAddr: "127.0.0.2:1", APIAddr: "127.0.0.2:2", GossipAddr: "127.0.0.2:3", Kind: fsm.KindHypervisor})
	c.must(t, &fsm.RegisterHost{Name: "h2", RaftAddr: "127.0.0.3:1", APIAddr: "127.0.0.3:2", GossipAddr: "127.0.0.3:3", Kind: fsm.KindHypervisor})
	c.must(t, &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f1", Name: "vm", VCPUs: 1, RAM: 1, Disk: 1, RxTxFactor: 1}})
	return c
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
func run(t *testing.T, c *local, nt *neutrontest.Neutron) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	p, err := serverports.New(nt, serverports.Config{VNICType: neutron.VNICNormal, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	m, err := compute.New(compute.Config{Logger: log, IntentLease: 500 * time.Millisecond}, c, vm{ports: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitStatus(t *testing.T, c *local, id string, want fsm.ServerStatus) fsm.Server {
	t.Helper()
	var s fsm.Server
	testkit.Eventually(t, 10*time.Second, func() error {
		var err error
		if s, err = c.store.Server(id); err != nil || s.Status != want {
			return fmt.Errorf("server %s is %s (%v), want %s", id, s.Status, err, want)
		}
		return nil
	})
	return s
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
	c.must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
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
	rec := c.store.ServerNet(serverID)
	want := []fsm.ServerPort{
		{ID: made.ID, NetworkID: netA, NetworkName: "tenant", MAC: made.MACAddress, FixedIPs: []fsm.PortIP{{Address: made.FixedIPs[0].IPAddress, Version: 4}}},
		{ID: hers.ID, NetworkID: netA, NetworkName: "tenant", MAC: hers.MACAddress, FixedIPs: []fsm.PortIP{{Address: hers.FixedIPs[0].IPAddress, Version: 4}}, User: true},
	}
	if fmt.Sprint(rec.Ports) != fmt.Sprint(want) {
		t.Fatalf("recorded\n %+v\nwant\n %+v", rec.Ports, want)
	}
	if got, want := c.intents(), []string{"create " + netA, "bind " + hers.ID, "attach " + made.ID, "attach " + hers.ID}; !slices.Equal(got, want) {
		t.Errorf("intents %q, want %q", got, want)
	}

	c.must(t, &fsm.DeleteServer{ID: serverID})
	waitStatus(t, c, serverID, fsm.StatusDeleted)
	if _, ok := nt.Get(made.ID); ok {
		t.Error("the created port outlives the server")
	}
	if kept, ok := nt.Get(hers.ID); !ok || kept.DeviceID != "" || kept.DeviceOwner != "" || kept.HostID != "" || kept.MACAddress != hers.MACAddress {
		t.Errorf("her port %+v (%v), want kept and unbound, with its MAC (a VM's port is no NIC's)", kept, ok)
	}
	if got := c.intents()[4:]; !slices.Equal(got, []string{"delete " + made.ID, "unbind " + hers.ID}) {
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
	c.must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", Networks: []fsm.Network{{UUID: netA}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	if ps := nt.OfDevice(serverID); len(ps) != 1 || ps[0].ID != earlier.ID || nt.Created() != 0 {
		t.Fatalf("ports %+v, %d created; want only the earlier one", ps, nt.Created())
	}
	if rec := c.store.ServerNet(serverID); len(rec.Ports) != 1 || rec.Ports[0].ID != earlier.ID {
		t.Fatalf("recorded %+v", rec.Ports)
	}
}

// A create whose intent is refused (the host lost the server, as the
// log says) is not sent, on any attempt.
func TestRefusedIntentCreatesNothing(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	c := newLocal(t)
	c.refuse = func(cmd fsm.Command) error {
		if in, ok := cmd.(*fsm.SetPortIntent); ok && in.Step == fsm.PortStepCreate {
			return fmt.Errorf("%w: server moved", fsm.ErrFenced)
		}
		return nil
	}
	run(t, c, nt)
	c.must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", Networks: []fsm.Network{{UUID: netA}}})
	testkit.Eventually(t, 10*time.Second, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.refused < 2 {
			return fmt.Errorf("%d create intents refused, want 2 attempts", c.refused)
		}
		return nil
	})
	if n := nt.Created(); n != 0 {
		t.Fatalf("%d ports created under refused intents", n)
	}
	if s, _ := c.store.Server(serverID); s.Status != fsm.StatusBuild {
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
		c.must(t, &fsm.CreateServer{ID: ids[i], Name: "vm", FlavorID: "f1", ImageRef: "img", Host: "h1",
			Networks: []fsm.Network{{UUID: netA, FixedIP: ip}}})
	}
	waitStatus(t, c, ids[0], fsm.StatusActive)
	if ps := nt.OfDevice(ids[0]); len(ps) != 1 || len(ps[0].FixedIPs) != 1 || ps[0].FixedIPs[0].IPAddress != "192.0.2.77" {
		t.Fatalf("ports %+v, want one with 192.0.2.77", ps)
	}
	if rec := c.store.ServerNet(ids[0]); len(rec.Ports) != 1 || rec.Ports[0].FixedIPs[0].Address != "192.0.2.77" {
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
