package driver_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
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
