package driver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
	"github.com/corral-dev/corral/testkit"
)

// nicMACs plays Ironic's part in Neutron on a VIF attach: the port gets
// the MAC of the node's first NIC that carries no other VIF
// (52:54:00:aa:NN:SS, NN the node's number, SS the NIC's), and when
// Neutron refuses it the attach fails as Ironic's does (its 500), the VIF
// not attached. A detach leaves the port's MAC alone, as Ironic does on a
// node that is not active.
type nicMACs struct {
	driver.Ironic
	nics   *nicTable
	setMAC func(ctx context.Context, port, mac string) error
}

// nicTable numbers the nodes as the peers' drivers first attach to them,
// and keeps which VIF each NIC carries (the simulator, as Ironic's noop
// network interface, lists none).
type nicTable struct {
	mu    sync.Mutex
	nodes map[string]int
	vifs  map[string][]string // node → VIF on NIC i ("" when free)
}

// plug puts vif on node's first free NIC and returns the NIC's MAC.
func (t *nicTable) plug(node, vif string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes == nil {
		t.nodes, t.vifs = map[string]int{}, map[string][]string{}
	}
	n, ok := t.nodes[node]
	if !ok {
		n = len(t.nodes)
		t.nodes[node] = n
	}
	i := slices.Index(t.vifs[node], vif)
	if i < 0 {
		if i = slices.Index(t.vifs[node], ""); i >= 0 {
			t.vifs[node][i] = vif
		} else {
			t.vifs[node] = append(t.vifs[node], vif)
			i = len(t.vifs[node]) - 1
		}
	}
	return fmt.Sprintf("52:54:00:aa:%02x:%02x", n, i+1)
}

func (t *nicTable) unplug(node, vif string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.vifs[node], vif); i >= 0 {
		t.vifs[node][i] = ""
	}
}

func (m *nicMACs) AttachVIF(ctx context.Context, node, vif string) error {
	if err := m.Ironic.AttachVIF(ctx, node, vif); err != nil {
		return err
	}
	mac := m.nics.plug(node, vif)
	if err := m.setMAC(ctx, vif, mac); err != nil {
		_ = m.DetachVIF(ctx, node, vif)
		return fmt.Errorf("%w: Unable to attach VIF %s because Ironic can not update Neutron port %s MAC address to match physical MAC address %s: %w",
			ironic.ErrUnavailable, vif, vif, mac, err)
	}
	return nil
}

func (m *nicMACs) DetachVIF(ctx context.Context, node, vif string) error {
	if err := m.Ironic.DetachVIF(ctx, node, vif); err != nil {
		return err
	}
	m.nics.unplug(node, vif)
	return nil
}

// withNICs wraps the peers' Ironic in nicMACs over one table.
func withNICs(setMAC func(ctx context.Context, port, mac string) error) func(driver.Ironic) driver.Ironic {
	nics := &nicTable{}
	return func(inner driver.Ironic) driver.Ironic { return &nicMACs{Ironic: inner, nics: nics, setMAC: setMAC} }
}

func neutronWorld(t *testing.T, peers int, nt *neutrontest.Neutron) *world {
	t.Helper()
	return neutronWorldCfg(t, peers, nt, compute.Config{})
}

func neutronWorldCfg(t *testing.T, peers int, nt *neutrontest.Neutron, ccfg compute.Config) *world {
	t.Helper()
	wrap := withNICs(func(_ context.Context, port, mac string) error { return nt.SetMAC(port, mac) })
	w := newWorldCfg(t, peers, sim.Options{}, wrap, driver.Config{Reservation: driver.ReserveAuto,
		DeployTimeout: 20 * time.Second, Neutron: nt}, ccfg)
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	return w
}

const netA = "0a000000-0000-4000-8000-00000000000a"

func provider() neutron.Network {
	return neutron.Network{ID: netA, Name: "provider", Shared: true}
}

// With Neutron, a boot creates the server's port (its device, owner,
// baremetal vnic, the node as host, the server's project), takes over the
// port the user passed in, records both with their addresses and attaches
// both as VIFs of the node, recording the MAC Ironic then put on each
// (the NIC's); the delete detaches them, deletes the port it
// created and gives the user's back.
func TestNeutronPortsOfABootAndItsDelete(t *testing.T) {
	nt := neutrontest.New(provider())
	mine := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	nets := []fsm.Network{{UUID: netA}, {Port: mine.ID}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: nets, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ports := nt.OfDevice(id)
	if len(ports) != 2 || nt.Created() != 1 {
		t.Fatalf("ports of the server %+v (%d created), want the created one and the user's", ports, nt.Created())
	}
	var made neutron.Port
	for _, p := range ports {
		if p.DeviceOwner != serverports.DeviceOwner || p.VNICType != neutron.VNICBaremetal || p.HostID != s.NodeUUID {
			t.Errorf("port %+v: want owner %s, vnic baremetal, host %s", p, serverports.DeviceOwner, s.NodeUUID)
		}
		if p.ID != mine.ID {
			made = p
		}
	}
	if made.ProjectID != "p1" || made.NetworkID != netA {
		t.Errorf("created port %+v, want project p1 on %s", made, netA)
	}
	rec := w.leader().Node.Store().ServerNet(id)
	// Both in the project's default security group, Neutron's choice.
	def := []fsm.SecurityGroupRef{{ID: "sg-default-p1", Name: "default"}}
	want := []fsm.ServerPort{
		{ID: made.ID, NetworkID: netA, NetworkName: "provider", MAC: "52:54:00:aa:00:01",
			FixedIPs: []fsm.PortIP{{Address: made.FixedIPs[0].IPAddress, Version: 4}}, SecurityGroups: def, GroupsKnown: true},
		{ID: mine.ID, NetworkID: netA, NetworkName: "provider", MAC: "52:54:00:aa:00:02",
			FixedIPs: []fsm.PortIP{{Address: mine.FixedIPs[0].IPAddress, Version: 4}}, User: true, SecurityGroups: def, GroupsKnown: true},
	}
	if fmt.Sprint(rec.Ports) != fmt.Sprint(want) {
		t.Fatalf("recorded ports\n %+v\nwant\n %+v", rec.Ports, want)
	}
	if in := rec.Intent; in == nil || in.Step != fsm.PortStepAttach || in.Host != s.Host || in.Epoch != s.Epoch {
		t.Fatalf("last intent %+v, want the attach at the owner's epoch", rec.Intent)
	}
	if v := w.sim.Nodes()[0].VIFs; !slices.Equal(v, []string{made.ID, mine.ID}) {
		t.Fatalf("node VIFs %v, want %s and %s", v, made.ID, mine.ID)
	}

	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	if _, ok := nt.Get(made.ID); ok {
		t.Error("the port corral created outlives the server")
	}
	kept, ok := nt.Get(mine.ID)
	if !ok || kept.DeviceID != "" || kept.DeviceOwner != "" || kept.HostID != "" {
		t.Errorf("the user's port %+v (%v), want kept and unbound", kept, ok)
	}
	if v := w.sim.Nodes()[0].VIFs; len(v) != 0 {
		t.Errorf("node VIFs %v after the delete", v)
	}
	if rec := w.leader().Node.Store().ServerNet(id); len(rec.Ports) != 0 {
		t.Errorf("ports still recorded: %+v", rec.Ports)
	}
}

// A port an earlier attempt created but did not live to record is found
// by its device (the server) and used: no second port.
func TestNeutronPortOfAnEarlierAttemptIsResumed(t *testing.T) {
	nt := neutrontest.New(provider())
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	earlier := nt.Add(neutron.PortCreate{NetworkID: netA, DeviceID: id, DeviceOwner: serverports.DeviceOwner})
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusActive)
	if ps := nt.OfDevice(id); len(ps) != 1 || ps[0].ID != earlier.ID || nt.Created() != 0 {
		t.Fatalf("ports %+v, %d created; want only the earlier one", ps, nt.Created())
	}
	if rec := w.leader().Node.Store().ServerNet(id); len(rec.Ports) != 1 || rec.Ports[0].ID != earlier.ID {
		t.Fatalf("recorded %+v", rec.Ports)
	}
	if v := w.sim.Nodes()[0].VIFs; !slices.Equal(v, []string{earlier.ID}) {
		t.Fatalf("node VIFs %v", v)
	}
}

// An owner that lost the server just before creating its port is refused
// the intent and stops without creating it; the new owner creates the
// one port the server gets.
func TestNeutronPortIntentRefusedAfterFailover(t *testing.T) {
	nt := neutrontest.New(provider())
	w := neutronWorld(t, 2, nt)
	id := uuid.NewString()
	moved := make(chan string, 1)
	nt.OnList = func() {
		// What happens while the owner is between its listing and its
		// intent: the server moves to the other host.
		to, err := w.moveServer(id)
		if err != nil {
			t.Error(err)
		}
		moved <- to
	}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	var to string
	select {
	case to = <-moved:
	case <-time.After(30 * time.Second):
		t.Fatal("the owner never listed the server's ports")
	}
	s := w.waitStatus(id, fsm.StatusActive)
	if s.Host != to {
		t.Fatalf("server owned by %s, want %s", s.Host, to)
	}
	ps := nt.OfDevice(id)
	if len(ps) != 1 || nt.Created() != 1 {
		t.Fatalf("ports %+v, %d created; want exactly one", ps, nt.Created())
	}
	if rec := w.leader().Node.Store().ServerNet(id); len(rec.Ports) != 1 || rec.Ports[0].ID != ps[0].ID ||
		rec.Intent == nil || rec.Intent.Host != to {
		t.Fatalf("recorded %+v, want the new owner's port and intent", rec)
	}
}

// A port the user passed in that another device took since the API
// checked it is not taken over: the build ends in ERROR with Nova's
// reason, and the port stays as it is.
func TestNeutronUserPortInUseEndsTheBuild(t *testing.T) {
	nt := neutrontest.New(provider())
	taken := nt.Add(neutron.PortCreate{NetworkID: netA, DeviceID: "another-server", DeviceOwner: "compute:nova"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{Port: taken.ID}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusError)
	if s.Fault == nil || s.Fault.Message != "Port "+taken.ID+" is still in use." {
		t.Fatalf("fault %+v, want Nova's port in use", s.Fault)
	}
	if p, _ := nt.Get(taken.ID); p.DeviceID != "another-server" || p.HostID != "" {
		t.Fatalf("the port was changed: %+v", p)
	}
	if v := w.sim.Nodes()[0].VIFs; len(v) != 0 {
		t.Fatalf("node VIFs %v", v)
	}
}

// moveServer gives server id to the other running peer and returns it.
func (w *world) moveServer(id string) (string, error) {
	s, err := w.leader().Node.Store().Server(id)
	if err != nil {
		return "", err
	}
	to := ""
	for _, p := range w.h.Running() {
		if p.Name != s.Host {
			to = p.Name
		}
	}
	return to, w.propose(&fsm.ReassignServers{Reason: fsm.ReasonAdminMove,
		Moves: []fsm.Move{{ServerID: id, FromHost: s.Host, FromEpoch: s.Epoch, ToHost: to}}})
}

// An owner that lost the server while its create was in flight leaves a
// create intent pending: the new owner waits for that intent's lease to
// end before it lists the server's ports, finds the port the create made
// and uses it: one port, not two.
func TestNeutronPendingCreateIsAwaitedAfterFailover(t *testing.T) {
	nt := neutrontest.New(provider())
	nt.NetworkCalls = make(chan struct{}, 16)
	w := neutronWorldCfg(t, 2, nt, compute.Config{IntentLease: 300 * time.Millisecond})
	id := uuid.NewString()
	moved := make(chan string, 1)
	nt.OnCreate = func() {
		// The create is in flight while the server moves; Neutron makes
		// the port only once the new owner has started on the server.
		<-nt.NetworkCalls // the first owner's
		to, err := w.moveServer(id)
		if err != nil {
			t.Error(err)
		}
		moved <- to
		select {
		case <-nt.NetworkCalls: // the new owner's, just before it would list
		case <-time.After(20 * time.Second):
			t.Error("the new owner never started on the server")
		}
	}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	var to string
	select {
	case to = <-moved:
	case <-time.After(30 * time.Second):
		t.Fatal("the owner never created the port")
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ps := nt.OfDevice(id)
	if s.Host != to || len(ps) != 1 || nt.Created() != 1 {
		t.Fatalf("server on %s (want %s), ports %+v, %d created; want the one port of the first create", s.Host, to, ps, nt.Created())
	}
	if rec := w.leader().Node.Store().ServerNet(id); len(rec.Ports) != 1 || rec.Ports[0].ID != ps[0].ID {
		t.Fatalf("recorded %+v, want %s", rec.Ports, ps[0].ID)
	}
}

// A server deleted while its port's create is in flight (the answer
// lost, the port made later) leaves no port behind: the delete waits for
// the pending create's lease to end before it lists the server's ports.
func TestNeutronDeleteAwaitsAPendingCreate(t *testing.T) {
	const lease = time.Second
	nt := neutrontest.New(provider())
	nt.LateBy = 1300 * time.Millisecond // after any retry, before the lease's end and margin
	w := neutronWorldCfg(t, 1, nt, compute.Config{IntentLease: lease})
	id := uuid.NewString()
	nt.OnCreate = func() {
		if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
			t.Error(err)
		}
	}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := nt.Created(); n != 1 {
			return fmt.Errorf("%d ports created, want the late one", n)
		}
		return nil
	})
	if ps := nt.OfDevice(id); len(ps) != 0 {
		t.Fatalf("ports of the deleted server: %+v", ps)
	}
}

// A user's port given back after a VIF detach that left the NIC's MAC on
// it (Ironic on a node that is not active) gets a new MAC of Neutron's
// when corral unbinds it, as Ironic does when it unbinds: the next boot
// on that node and network can then put the NIC's MAC on its own port.
func TestNeutronUserPortGivenBackWithANewMAC(t *testing.T) {
	nt := neutrontest.New(provider())
	hers := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	w := neutronWorld(t, 1, nt)
	first := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: first, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{Port: hers.ID}},
		ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(first, fsm.StatusActive)
	const nic = "52:54:00:aa:00:01"
	if p, _ := nt.Get(hers.ID); p.MACAddress != nic {
		t.Fatalf("her port's MAC %s, want the NIC's %s", p.MACAddress, nic)
	}
	if err := w.propose(&fsm.DeleteServer{ID: first}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(first, fsm.StatusDeleted)
	if p, _ := nt.Get(hers.ID); p.DeviceID != "" || p.MACAddress == nic || p.MACAddress == "" {
		t.Fatalf("her port given back %+v: want unbound, with a MAC other than the NIC's", p)
	}
	next := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: next, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(next, fsm.StatusActive)
	if ps := nt.OfDevice(next); len(ps) != 1 || ps[0].MACAddress != nic {
		t.Fatalf("ports of the next server %+v, want one with the NIC's MAC", ps)
	}
}

// refusing is Ironic that refuses every deploy as invalid, after the
// VIFs are attached.
type refusing struct{ driver.Ironic }

func (refusing) Deploy(context.Context, string, ironic.DeploySpec) error {
	return fmt.Errorf("%w: the image cannot be deployed", ironic.ErrInvalid)
}

// A build that ends in ERROR gives back its ports before the ERROR, as
// Nova's compute manager deallocates a failed build's networks: every
// VIF detached from the node, the port corral created deleted, the
// user's unbound (with a new MAC), each after its intent at the owner's
// epoch, nothing left recorded; the server's delete then has nothing of
// Neutron's to do.
func TestNeutronFailedBuildGivesBackItsPorts(t *testing.T) {
	nt := neutrontest.New(provider())
	hers := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	nics := withNICs(func(_ context.Context, port, mac string) error { return nt.SetMAC(port, mac) })
	w := newWorldCfg(t, 1, sim.Options{}, func(inner driver.Ironic) driver.Ironic { return refusing{nics(inner)} },
		driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second, Neutron: nt}, compute.Config{})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {Port: hers.ID}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "Ironic refused to deploy") {
		t.Fatalf("fault %+v", s.Fault)
	}
	if nt.Created() != 1 {
		t.Fatalf("%d ports created, want 1", nt.Created())
	}
	if ps := nt.OfDevice(id); len(ps) != 0 {
		t.Errorf("ports of the failed server: %+v", ps)
	}
	if p, _ := nt.Get(hers.ID); p.DeviceID != "" || p.HostID != "" || strings.HasPrefix(p.MACAddress, "52:54:00") {
		t.Errorf("her port %+v, want unbound with a MAC of Neutron's", p)
	}
	if v := w.sim.Nodes()[0].VIFs; len(v) != 0 {
		t.Errorf("node VIFs %v after the failed build", v)
	}
	rec := w.leader().Node.Store().ServerNet(id)
	if len(rec.Ports) != 0 || rec.Intent == nil || rec.Intent.Step != fsm.PortStepUnbind || rec.Intent.Epoch != s.Epoch {
		t.Errorf("recorded %+v, want no port, the last intent the unbind at the owner's epoch", rec)
	}
	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	if p, _ := nt.Get(hers.ID); p.DeviceID != "" {
		t.Errorf("her port after the delete %+v", p)
	}
}
