package driver_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
)

// With a mechanism driver that binds a port given a host (networking-
// baremetal, with its agent for the node), Neutron refuses a new MAC on
// a bound port, and Ironic's VIF attach puts the NIC's MAC on the port:
// the ports, the one corral creates and the user's it takes over, get
// the node as host only once attached as VIFs, and are then bound.
func TestNeutronPortsBoundOnceAttached(t *testing.T) {
	nt := neutrontest.New(provider())
	nt.Binds = true
	mine := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	w := neutronWorld(t, 1, nt)
	id := uuid.NewString()
	nets := []fsm.Network{{UUID: netA}, {Port: mine.ID}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img", Networks: nets, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ports := nt.OfDevice(id)
	if len(ports) != 2 {
		t.Fatalf("ports of the server %+v, want 2", ports)
	}
	for _, p := range ports {
		if p.HostID != s.NodeUUID || p.VIFType != "other" || !strings.HasPrefix(p.MACAddress, "52:54:00:aa:") {
			t.Errorf("port %+v: want bound (other) to %s, with the NIC's MAC", p, s.NodeUUID)
		}
	}
	if n := nt.HostUpdates(); n != 2 {
		t.Errorf("%d updates gave a port a host, want one per port", n)
	}
}

// attachCounter counts the VIF attaches sent to Ironic, by VIF, and the
// VIF listings.
type attachCounter struct {
	driver.Ironic
	mu    sync.Mutex
	n     map[string]int
	lists int
}

func (a *attachCounter) ListVIFs(ctx context.Context, node string) ([]string, error) {
	a.mu.Lock()
	a.lists++
	a.mu.Unlock()
	return a.Ironic.ListVIFs(ctx, node)
}

func (a *attachCounter) AttachVIF(ctx context.Context, node, vif string) error {
	a.mu.Lock()
	a.n[vif]++
	a.mu.Unlock()
	return a.Ironic.AttachVIF(ctx, node, vif)
}

// A build step retried once its port is attached (here: the answer to
// the port's binding lost) does not attach the VIF again: Ironic's
// attach of a VIF it already has asks Neutron about the port and the
// node's networks before it answers that it has it, a cost a busy
// Neutron pays on every retry. The VIFs Ironic lists on the node are
// left as they are; a first attempt does not list them (Ironic's listing
// asks Neutron too).
func TestNeutronAttachedVIFNotAttachedAgain(t *testing.T) {
	nt := neutrontest.New(provider())
	nt.BindFault = neutrontest.BindAnswerLost
	counter := &attachCounter{n: map[string]int{}}
	w := newWorldCfg(t, 1, sim.Options{}, func(inner driver.Ironic) driver.Ironic { counter.Ironic = inner; return counter },
		driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second, Neutron: nt}, compute.Config{})
	w.sim.Seed([]sim.NodeSpec{{Name: "flat-0", ResourceClass: "baremetal-gold", MACs: []string{"52:54:00:bb:00:01"}, NetworkInterface: "flat",
		Properties: map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"}}})
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "n", FlavorID: "gold", ImageRef: "img",
		Networks: []fsm.Network{{UUID: netA}}, ProjectID: "p1"}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	ps := nt.OfDevice(id)
	if len(ps) != 1 || ps[0].HostID != s.NodeUUID {
		t.Fatalf("ports of the server %+v, want one with host %s", ps, s.NodeUUID)
	}
	if v := w.sim.Nodes()[0].VIFs; !slices.Equal(v, []string{ps[0].ID}) {
		t.Fatalf("node VIFs %v, want [%s]", v, ps[0].ID)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if n := counter.n[ps[0].ID]; n != 1 || nt.HostUpdates() != 1 {
		t.Fatalf("VIF %s attached %d times (binding sent %d times), want once after the binding's lost answer",
			ps[0].ID, n, nt.HostUpdates())
	}
	// Ironic's listing of a node's VIFs asks Neutron too: only the retry
	// lists them.
	if counter.lists != 1 {
		t.Fatalf("the node's VIFs listed %d times, want once (by the retry)", counter.lists)
	}
}
