package serverports_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/computetest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/neutron/serverports"
)

// bm is a bare-metal virt driver that gives its servers ports of vnic
// type baremetal, bound to its host, and plugs each as Ironic's VIF
// attach does: the port gets the MAC of a NIC of the node's (one per
// port, the same again for a port plugged before).
type bm struct {
	ports *serverports.Ports
	nt    *neutrontest.Neutron

	mu   sync.Mutex
	nics map[string]string // port → MAC
}

func (*bm) Kind() string { return fsm.KindHypervisor }

func (b *bm) plug(id string) func(context.Context) error {
	return func(context.Context) error {
		b.mu.Lock()
		mac, ok := b.nics[id]
		if !ok {
			mac = fmt.Sprintf("52:54:00:aa:00:%02x", len(b.nics)+1)
			b.nics[id] = mac
		}
		b.mu.Unlock()
		if err := b.nt.SetMAC(id, mac); err != nil {
			return fmt.Errorf("Ironic can not update Neutron port %s MAC address to match physical MAC address %s: %w", id, mac, err)
		}
		return nil
	}
}

func (b *bm) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	ids, err := b.ports.Ensure(ctx, h, s, h.Host())
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := b.ports.Attach(ctx, h, s, id, h.Host(), b.plug(id)); err != nil {
			return err
		}
	}
	return nil
}

func (b *bm) Delete(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	return b.ports.Release(ctx, h, s)
}

// runBM runs h1's manager with bare-metal ports on nt.
func runBM(t *testing.T, c *computetest.Cluster, nt *neutrontest.Neutron) {
	t.Helper()
	p, err := serverports.New(nt, serverports.Config{VNICType: neutron.VNICBaremetal, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(t, compute.Config{IntentLease: 500 * time.Millisecond}, &bm{ports: p, nt: nt, nics: map[string]string{}})
}

// With a mechanism driver that binds a port given a host (networking-
// baremetal, with its agent for the node), Neutron refuses a new MAC on
// the bound port, and Ironic's VIF attach puts the NIC's MAC on it: the
// bare-metal ports, the one corral creates and the user's it takes over,
// get the host only once plugged, and are then bound.
func TestBareMetalPortsBoundOncePlugged(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	nt.Binds = true
	hers := nt.Add(neutron.PortCreate{NetworkID: netA, ProjectID: "p1"})
	c := newLocal(t)
	runBM(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "bm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {Port: hers.ID}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	ports := nt.OfDevice(serverID)
	if len(ports) != 2 {
		t.Fatalf("ports of the server %+v, want 2", ports)
	}
	for _, p := range ports {
		if p.HostID != "h1" || p.VIFType != "other" || p.MACAddress[:9] != "52:54:00:" {
			t.Errorf("port %+v: want bound (other) to h1, with the NIC's MAC", p)
		}
		if rec, _ := c.Store().ServerNet(serverID).Port(p.ID); rec.MAC != p.MACAddress {
			t.Errorf("port %s recorded with MAC %s, Neutron has %s", p.ID, rec.MAC, p.MACAddress)
		}
	}
	if n := nt.HostUpdates(); n != 2 {
		t.Errorf("%d updates gave a port a host, want one per port", n)
	}
}

// A binding whose answer was lost (Neutron, busy, carried it out after
// the client gave up) is not asked for again: the retry finds the port
// bound to the host. A binding no driver can make (binding_failed)
// costs Neutron ten attempts; a slow Neutron is not given one more at
// each retry.
func TestBindingNotResentOnceTried(t *testing.T) {
	for _, binds := range []bool{true, false} {
		t.Run(fmt.Sprintf("binds=%v", binds), func(t *testing.T) {
			nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
			nt.Binds, nt.BindFault = binds, neutrontest.BindAnswerLost
			c := newLocal(t)
			runBM(t, c, nt)
			c.Must(t, &fsm.CreateServer{ID: serverID, Name: "bm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
				Networks: []fsm.Network{{UUID: netA}}})
			waitStatus(t, c, serverID, fsm.StatusActive)
			want := map[bool]string{true: "other", false: "binding_failed"}[binds]
			if ps := nt.OfDevice(serverID); len(ps) != 1 || ps[0].HostID != "h1" || ps[0].VIFType != want {
				t.Fatalf("ports of the server %+v, want one with host h1, %s", ps, want)
			}
			if n := nt.HostUpdates(); n != 1 {
				t.Fatalf("the binding was sent %d times, want once", n)
			}
		})
	}
}

// A binding Neutron stored the host of but did not try (a 500 half way:
// vif_type unbound) is asked for again, and is made.
func TestHalfDoneBindingIsSentAgain(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	nt.Binds, nt.BindFault = true, neutrontest.BindHalfDone
	c := newLocal(t)
	runBM(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "bm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	if ps := nt.OfDevice(serverID); len(ps) != 1 || ps[0].HostID != "h1" || ps[0].VIFType != "other" {
		t.Fatalf("ports of the server %+v, want one bound (other) to h1", ps)
	}
	if n := nt.HostUpdates(); n != 2 {
		t.Fatalf("the binding was sent %d times, want twice (the first half done)", n)
	}
}
