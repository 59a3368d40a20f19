package driver_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit"
)

// fakeNeutron keeps networks and ports in memory, as Neutron answers
// corral's service user.
type fakeNeutron struct {
	mu       sync.Mutex
	networks map[string]neutron.Network
	ports    map[string]neutron.Port
	next     int
	creates  int
	// onList, when set, runs once, on the first listing by device;
	// onCreate once, at the first create, before the port is made.
	onList, onCreate func()
	once, onceCreate sync.Once
	networkCalls     chan struct{} // one value per Network call, when not nil
	// lateBy, when set, makes the first create (the one onCreate runs
	// at) fail and its port appear that much later.
	lateBy time.Duration
	// loseBind, when set, loses the answer to the first update that
	// gives a port a host (Neutron carries it out; the client times out);
	// failBind fails it half done, as Neutron on SQLite does when the
	// database is locked: the host is stored, the binding is not
	// (vif_type unbound), and the answer is a 500.
	loseBind, failBind, lostBind bool
	hostUpdates                  int // updates that set a host
	// binds, when set, binds every port given a host, as a mechanism
	// driver does that can (networking-baremetal with its agent for the
	// node): a bound port then refuses a new MAC, as Neutron does
	// (PortBound).
	binds bool
}

func newFakeNeutron(nets ...neutron.Network) *fakeNeutron {
	f := &fakeNeutron{networks: map[string]neutron.Network{}, ports: map[string]neutron.Port{}}
	for _, n := range nets {
		f.networks[n.ID] = n
	}
	return f
}

func (f *fakeNeutron) Network(_ context.Context, id string) (neutron.Network, error) {
	if f.networkCalls != nil {
		f.networkCalls <- struct{}{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.networks[id]
	if !ok {
		return n, fmt.Errorf("%w: network %s", neutron.ErrNotFound, id)
	}
	return n, nil
}

// add creates a port as Neutron would, with an address and a MAC.
func (f *fakeNeutron) add(p neutron.PortCreate) neutron.Port {
	f.next++
	port := neutron.Port{ID: uuid.NewString(), NetworkID: p.NetworkID, ProjectID: p.ProjectID, DeviceID: p.DeviceID,
		DeviceOwner: p.DeviceOwner, VNICType: p.VNICType, HostID: p.HostID, Status: "DOWN",
		MACAddress: fmt.Sprintf("fa:16:3e:00:00:%02x", f.next),
		FixedIPs:   []neutron.FixedIP{{SubnetID: "sub-" + p.NetworkID, IPAddress: fmt.Sprintf("192.0.2.%d", 10+f.next)}}}
	f.ports[port.ID] = port
	return port
}

func (f *fakeNeutron) Port(_ context.Context, id string) (neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return p, fmt.Errorf("%w: port %s", neutron.ErrNotFound, id)
	}
	return p, nil
}

// setMAC changes a port's MAC, as Ironic's VIF attach does; a bound
// port refuses it.
func (f *fakeNeutron) setMAC(id, mac string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return nil
	}
	if p.VIFType == "other" { // Neutron allows it only unbound or binding_failed
		return fmt.Errorf("%w: PortBound: Unable to complete operation on port %s, port is already bound, port type: other, "+
			"old_mac %s, new_mac %s.", neutron.ErrConflict, id, p.MACAddress, mac)
	}
	p.MACAddress = mac
	f.ports[id] = p
	return nil
}

func (f *fakeNeutron) CreatePort(_ context.Context, p neutron.PortCreate) (neutron.Port, error) {
	late := false
	if f.onCreate != nil {
		f.onceCreate.Do(func() { f.onCreate(); late = f.lateBy > 0 })
	}
	if late {
		// The request reached Neutron, the answer is lost, and Neutron
		// makes the port a while later.
		time.AfterFunc(f.lateBy, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.creates++
			f.add(p)
		})
		return neutron.Port{}, fmt.Errorf("%w: no answer", neutron.ErrUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.networks[p.NetworkID]; !ok {
		return neutron.Port{}, fmt.Errorf("%w: network %s", neutron.ErrNotFound, p.NetworkID)
	}
	f.creates++
	return f.add(p), nil
}

func (f *fakeNeutron) Ports(_ context.Context, fl neutron.PortFilter) ([]neutron.Port, error) {
	if fl.DeviceID != "" && f.onList != nil {
		f.once.Do(f.onList)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []neutron.Port
	for _, p := range f.ports {
		if fl.DeviceID == "" || p.DeviceID == fl.DeviceID {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b neutron.Port) int { return compareStrings(a.ID, b.ID) })
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *fakeNeutron) UpdatePort(_ context.Context, id string, u neutron.PortUpdate) (neutron.Port, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	if !ok {
		return p, fmt.Errorf("%w: port %s", neutron.ErrNotFound, id)
	}
	if u.DeviceID != nil {
		p.DeviceID = *u.DeviceID
	}
	if u.DeviceOwner != nil {
		p.DeviceOwner = *u.DeviceOwner
	}
	if u.HostID != nil {
		p.HostID = *u.HostID
		if *u.HostID != "" {
			f.hostUpdates++
		}
	}
	if u.VNICType != "" {
		p.VNICType = u.VNICType
	}
	// Any update of a port with a host and no binding binds it again.
	switch {
	case p.HostID == "":
		p.VIFType = "unbound"
	case p.VIFType == "other":
	case f.binds:
		p.VIFType = "other"
	default:
		p.VIFType = "binding_failed"
	}
	if u.HostID != nil && *u.HostID != "" && (f.loseBind || f.failBind) && !f.lostBind {
		f.lostBind = true
		if f.failBind {
			p.VIFType = "unbound"
			f.ports[id] = p
			return neutron.Port{}, fmt.Errorf("%w: HTTP 500: database is locked", neutron.ErrUnavailable)
		}
		f.ports[id] = p
		return neutron.Port{}, fmt.Errorf("%w: context deadline exceeded", neutron.ErrUnavailable)
	}
	f.ports[id] = p
	return p, nil
}

func (f *fakeNeutron) UnbindPort(ctx context.Context, id string) (neutron.Port, error) {
	empty := ""
	return f.UpdatePort(ctx, id, neutron.PortUpdate{DeviceID: &empty, DeviceOwner: &empty, HostID: &empty})
}

func (f *fakeNeutron) DeletePort(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ports, id)
	return nil
}

func (f *fakeNeutron) port(id string) (neutron.Port, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	return p, ok
}

func (f *fakeNeutron) ofDevice(id string) []neutron.Port {
	ps, _ := f.Ports(context.Background(), neutron.PortFilter{DeviceID: id})
	return ps
}

func (f *fakeNeutron) created() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}

// nicMACs plays Ironic's part in Neutron on a VIF attach: the port gets
// the MAC of the node's NIC (52:54:00:aa:00:NN, one per attach).
type nicMACs struct {
	driver.Ironic
	nt       *fakeNeutron
	mu       sync.Mutex
	n        int
	attached map[string]bool // node/vif: attached before (Ironic's 409, no MAC update)
}

func (m *nicMACs) AttachVIF(ctx context.Context, node, vif string) error {
	if err := m.Ironic.AttachVIF(ctx, node, vif); err != nil {
		return err
	}
	m.mu.Lock()
	if m.attached == nil {
		m.attached = map[string]bool{}
	}
	if m.attached[node+"/"+vif] {
		m.mu.Unlock()
		return nil
	}
	m.n++
	mac := fmt.Sprintf("52:54:00:aa:00:%02x", m.n)
	m.mu.Unlock()
	if err := m.nt.setMAC(vif, mac); err != nil {
		// What Ironic answers then (500).
		return fmt.Errorf("Unable to attach VIF %s, not enough free physical ports or Ironic can not update Neutron "+
			"port %s MAC address to match physical MAC address %s: %w", vif, vif, mac, err)
	}
	m.mu.Lock()
	m.attached[node+"/"+vif] = true
	m.mu.Unlock()
	return nil
}

func neutronWorld(t *testing.T, peers int, nt *fakeNeutron) *world {
	t.Helper()
	return neutronWorldCfg(t, peers, nt, compute.Config{})
}

func neutronWorldCfg(t *testing.T, peers int, nt *fakeNeutron, ccfg compute.Config) *world {
	t.Helper()
	wrap := func(inner driver.Ironic) driver.Ironic { return &nicMACs{Ironic: inner, nt: nt} }
	w := newWorldCfg(t, peers, sim.Options{}, wrap, driver.Config{Reservation: driver.ReserveAuto,
		DeployTimeout: 20 * time.Second, Neutron: nt}, ccfg)
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	return w
}

const netA = "0a000000-0000-4000-8000-00000000000a"

// A binding whose answer was lost (Neutron, busy, carried it out after
// the client gave up) is not sent again: the retry finds the port bound
// to the node. A slow Neutron is not given the same costly binding once
// more at each retry.
func TestNeutronBindingNotResentOnceDone(t *testing.T) {
	nt := newFakeNeutron(provider())
	nt.loseBind = true
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img",
		Networks: []fsm.Network{{UUID: netA}}, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ps := nt.ofDevice(id)
	if len(ps) != 1 || ps[0].HostID != s.NodeUUID {
		t.Fatalf("ports of the server %+v, want one bound to %s", ps, s.NodeUUID)
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if !nt.lostBind || nt.hostUpdates != 1 {
		t.Fatalf("the binding was sent %d times (answer lost: %v), want once", nt.hostUpdates, nt.lostBind)
	}
}

// A binding Neutron stored the host of but did not complete (a 500:
// vif_type unbound) is asked for again, and completes.
func TestNeutronHalfDoneBindingIsSentAgain(t *testing.T) {
	nt := newFakeNeutron(provider())
	nt.binds, nt.failBind = true, true
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img",
		Networks: []fsm.Network{{UUID: netA}}, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ps := nt.ofDevice(id)
	if len(ps) != 1 || ps[0].HostID != s.NodeUUID || ps[0].VIFType != "other" {
		t.Fatalf("ports of the server %+v, want one bound (other) to %s", ps, s.NodeUUID)
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if !nt.lostBind || nt.hostUpdates != 2 {
		t.Fatalf("the binding was sent %d times (first one half done: %v), want twice", nt.hostUpdates, nt.lostBind)
	}
}

// With a mechanism driver that binds a port given a host (networking-
// baremetal, with its agent for the node), Neutron refuses a new MAC on
// a bound port, and Ironic's VIF attach puts the NIC's MAC on the port:
// the ports, the one corral creates and the user's it takes over, get
// the node as host only once they are attached.
func TestNeutronPortsBoundOnceAttached(t *testing.T) {
	nt := newFakeNeutron(provider())
	nt.binds = true
	mine := nt.add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	nets := []fsm.Network{{UUID: netA}, {Port: mine.ID}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: nets, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ports := nt.ofDevice(id)
	if len(ports) != 2 {
		t.Fatalf("ports of the server %+v, want 2", ports)
	}
	for _, p := range ports {
		if p.HostID != s.NodeUUID || p.MACAddress[:9] != "52:54:00:" {
			t.Errorf("port %+v: want host %s and the NIC's MAC", p, s.NodeUUID)
		}
	}
}

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
	nt := newFakeNeutron(provider())
	mine := nt.add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	nets := []fsm.Network{{UUID: netA}, {Port: mine.ID}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: nets, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ports := nt.ofDevice(id)
	if len(ports) != 2 || nt.created() != 1 {
		t.Fatalf("ports of the server %+v (%d created), want the created one and the user's", ports, nt.created())
	}
	var made neutron.Port
	for _, p := range ports {
		if p.DeviceOwner != driver.DeviceOwner || p.VNICType != neutron.VNICBaremetal || p.HostID != s.NodeUUID {
			t.Errorf("port %+v: want owner %s, vnic baremetal, host %s", p, driver.DeviceOwner, s.NodeUUID)
		}
		if p.ID != mine.ID {
			made = p
		}
	}
	if made.ProjectID != "p1" || made.NetworkID != netA {
		t.Errorf("created port %+v, want project p1 on %s", made, netA)
	}
	rec := w.leader().Node.Store().ServerNet(id)
	want := []fsm.ServerPort{
		{ID: made.ID, NetworkID: netA, NetworkName: "provider", MAC: "52:54:00:aa:00:01",
			FixedIPs: []fsm.PortIP{{Address: made.FixedIPs[0].IPAddress, Version: 4}}},
		{ID: mine.ID, NetworkID: netA, NetworkName: "provider", MAC: "52:54:00:aa:00:02",
			FixedIPs: []fsm.PortIP{{Address: mine.FixedIPs[0].IPAddress, Version: 4}}, User: true},
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
	if _, ok := nt.port(made.ID); ok {
		t.Error("the port corral created outlives the server")
	}
	kept, ok := nt.port(mine.ID)
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
	nt := newFakeNeutron(provider())
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	earlier := nt.add(neutron.PortCreate{NetworkID: netA, DeviceID: id, DeviceOwner: driver.DeviceOwner})
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusActive)
	if ps := nt.ofDevice(id); len(ps) != 1 || ps[0].ID != earlier.ID || nt.created() != 0 {
		t.Fatalf("ports %+v, %d created; want only the earlier one", ps, nt.created())
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
	nt := newFakeNeutron(provider())
	w := neutronWorld(t, 2, nt)
	id := uuid.NewString()
	moved := make(chan string, 1)
	nt.onList = func() {
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
	ps := nt.ofDevice(id)
	if len(ps) != 1 || nt.created() != 1 {
		t.Fatalf("ports %+v, %d created; want exactly one", ps, nt.created())
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
	nt := newFakeNeutron(provider())
	taken := nt.add(neutron.PortCreate{NetworkID: netA, DeviceID: "another-server", DeviceOwner: "compute:nova"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{Port: taken.ID}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusError)
	if s.Fault == nil || s.Fault.Message != "Port "+taken.ID+" is still in use." {
		t.Fatalf("fault %+v, want Nova's port in use", s.Fault)
	}
	if p, _ := nt.port(taken.ID); p.DeviceID != "another-server" || p.HostID != "" {
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
	nt := newFakeNeutron(provider())
	nt.networkCalls = make(chan struct{}, 16)
	w := neutronWorldCfg(t, 2, nt, compute.Config{IntentLease: 300 * time.Millisecond})
	id := uuid.NewString()
	moved := make(chan string, 1)
	nt.onCreate = func() {
		// The create is in flight while the server moves; Neutron makes
		// the port only once the new owner has started on the server.
		<-nt.networkCalls // the first owner's
		to, err := w.moveServer(id)
		if err != nil {
			t.Error(err)
		}
		moved <- to
		select {
		case <-nt.networkCalls: // the new owner's, just before it would list
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
	ps := nt.ofDevice(id)
	if s.Host != to || len(ps) != 1 || nt.created() != 1 {
		t.Fatalf("server on %s (want %s), ports %+v, %d created; want the one port of the first create", s.Host, to, ps, nt.created())
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
	nt := newFakeNeutron(provider())
	nt.lateBy = 1300 * time.Millisecond // after any retry, before the lease's end and margin
	w := neutronWorldCfg(t, 1, nt, compute.Config{IntentLease: lease})
	id := uuid.NewString()
	nt.onCreate = func() {
		if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
			t.Error(err)
		}
	}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := nt.created(); n != 1 {
			return fmt.Errorf("%d ports created, want the late one", n)
		}
		return nil
	})
	if ps := nt.ofDevice(id); len(ps) != 0 {
		t.Fatalf("ports of the deleted server: %+v", ps)
	}
}
