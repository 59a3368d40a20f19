package driver_test

import (
	"fmt"
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
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
	"github.com/corral-dev/corral/testkit"
)

const netB = "0b000000-0000-4000-8000-00000000000b"

// flatWorld is a one-peer world whose one node uses the flat network
// interface with nics ports, its driver's ports on nt.
func flatWorld(t *testing.T, nt serverports.Neutron, nics int) *world {
	t.Helper()
	w := newWorldCfg(t, 1, sim.Options{}, nil, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second,
		Neutron: nt}, compute.Config{})
	var macs []string
	for i := range nics {
		macs = append(macs, fmt.Sprintf("52:54:00:bb:00:%02x", i+1))
	}
	w.sim.Seed([]sim.NodeSpec{{Name: "flat-0", ResourceClass: "baremetal-gold", MACs: macs, NetworkInterface: "flat",
		Properties: map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"}}})
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	return w
}

// interfaceDone requests an interface action and waits for its outcome.
func (w *world) interfaceDone(cmd *fsm.RequestInterfaceAction) fsm.InterfaceRequest {
	w.t.Helper()
	cmd.RequestID = "req-" + uuid.NewString()
	if err := w.propose(cmd); err != nil {
		w.t.Fatal(err)
	}
	var in fsm.InterfaceRequest
	testkit.Eventually(w.t, 30*time.Second, func() error {
		got := w.leader().Node.Store().ServerNet(cmd.ID).Interface
		if got == nil || got.RequestID != cmd.RequestID || !got.Done {
			return fmt.Errorf("the %s is not done: %+v", cmd.Kind, got)
		}
		in = *got
		return nil
	})
	return in
}

// os-interface on an ACTIVE bare-metal server: an attach of a network
// gets a port of corral's bound to the node and attached as a VIF; one
// the node has no free port for is refused by Ironic, and the port
// taken for it given back; a detach detaches the VIF and deletes
// corral's port or gives the user's back; each step after its intent,
// each outcome in the server's history, the server ACTIVE throughout.
func TestNeutronInterfaceAttachAndDetach(t *testing.T) {
	nt := neutrontest.New(provider(), neutron.Network{ID: netB, Name: "tenant-b", Shared: true})
	hers := nt.Add(neutron.PortCreate{NetworkID: netB, ProjectID: "p1"})
	w := flatWorld(t, nt, 2)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	boot := nt.OfDevice(id)[0]
	vifs := func() []string { v := slices.Clone(w.sim.Nodes()[0].VIFs); slices.Sort(v); return v }

	in := w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionAttachInterface, NetworkID: netB})
	made, ok := nt.Get(in.PortID)
	if in.Fault != "" || !ok || made.NetworkID != netB || made.DeviceID != id || made.HostID != s.NodeUUID ||
		made.VNICType != neutron.VNICBaremetal || made.Description != neutron.CreatedByCorral {
		t.Fatalf("attach of a network: %+v, port %+v", in, made)
	}
	if got, want := vifs(), sorted(boot.ID, made.ID); !slices.Equal(got, want) {
		t.Fatalf("node VIFs %v, want %v", got, want)
	}
	if rec := w.leader().Node.Store().ServerNet(id); len(rec.Ports) != 2 || rec.Ports[1].ID != made.ID || rec.Ports[1].NetworkName != "tenant-b" {
		t.Fatalf("recorded %+v", rec.Ports)
	}

	in = w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionAttachInterface, PortID: hers.ID})
	if !strings.Contains(in.Fault, "not enough free physical ports") {
		t.Fatalf("attach beyond the node's ports: %+v, want Ironic's refusal", in)
	}
	if p, _ := nt.Get(hers.ID); p.DeviceID != "" || p.HostID != "" {
		t.Fatalf("her port after the refused attach %+v, want given back", p)
	}
	if cur, _ := w.leader().Node.Store().Server(id); cur.Status != fsm.StatusActive || cur.TaskState != "" {
		t.Fatalf("server %s/%s after the refused attach", cur.Status, cur.TaskState)
	}

	in = w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionDetachInterface, PortID: made.ID})
	if _, ok := nt.Get(made.ID); in.Fault != "" || ok {
		t.Fatalf("detach of corral's port: %+v, port still there: %v", in, ok)
	}
	in = w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionAttachInterface, PortID: hers.ID})
	if p, _ := nt.Get(hers.ID); in.Fault != "" || in.PortID != hers.ID || p.DeviceID != id || p.HostID != s.NodeUUID {
		t.Fatalf("attach of her port: %+v, port %+v", in, p)
	}
	if got, want := vifs(), sorted(boot.ID, hers.ID); !slices.Equal(got, want) {
		t.Fatalf("node VIFs %v, want %v", got, want)
	}
	in = w.interfaceDone(&fsm.RequestInterfaceAction{ID: id, Kind: fsm.ActionDetachInterface, PortID: hers.ID})
	if p, ok := nt.Get(hers.ID); in.Fault != "" || !ok || p.DeviceID != "" || p.HostID != "" {
		t.Fatalf("detach of her port: %+v, port %+v (%v), want kept and unbound", in, p, ok)
	}
	if got := vifs(); !slices.Equal(got, []string{boot.ID}) {
		t.Fatalf("node VIFs %v, want the boot's port only", got)
	}
	var got []string
	for _, a := range w.leader().Node.Store().InstanceActions(id) {
		if a.Action == fsm.ActionAttachInterface || a.Action == fsm.ActionDetachInterface {
			got = append(got, a.Action+":"+a.Events[0].Result)
		}
	}
	want := []string{"attach_interface:Success", "attach_interface:Error", "detach_interface:Success", "attach_interface:Success", "detach_interface:Success"}
	if !slices.Equal(got, want) {
		t.Errorf("history %v, want %v", got, want)
	}
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }
