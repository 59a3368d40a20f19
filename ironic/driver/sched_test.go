package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/ironic/sim"
)

// resync replaces the drivers and node syncs of w's peers with ones whose
// syncs run every interval and are wired to their peer as cmd/corral
// wires them (SetMirrorSync), so that the leader refreshes the mirror for
// a boot that finds no node. between runs after the old ones stopped and
// before the new ones start.
func (w *world) resync(interval time.Duration, between func()) {
	t := w.t
	t.Helper()
	for _, p := range w.h.Running() {
		w.stopDriver(p.Name)
	}
	between()
	for _, p := range w.h.Running() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		w.drivers[p.Name], w.done[p.Name] = cancel, done
		c, err := ironic.New(ctx, ironic.Options{URL: w.url})
		if err != nil {
			t.Fatal(err)
		}
		virt, err := driver.New(driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second}, c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := compute.New(compute.Config{}, p.Node, virt)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := mirror.New(p.Node, p.Node, c, mirror.Config{Interval: interval})
		if err != nil {
			t.Fatal(err)
		}
		p.Node.SetMirrorSync(ns)
		go func() {
			defer close(done)
			go ns.Run(ctx)
			d.Run(ctx)
		}()
	}
}

// A node that lacks a required capability is never claimed: uefi servers
// take the uefi nodes, and once those are gone the next one is "No valid
// host" (ERROR, no host) — no allocation lands on a bios node.
func TestCapabilitiesChooseTheNode(t *testing.T) {
	w := newWorld(t, 3, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond})
	spec := func(mode string) sim.NodeSpec {
		return sim.NodeSpec{ResourceClass: "baremetal-gold", Properties: map[string]any{"capabilities": "boot_mode:" + mode}}
	}
	uefi := map[string]bool{}
	for i, id := range w.sim.Seed([]sim.NodeSpec{spec("uefi"), spec("bios"), spec("uefi"), spec("bios"), spec("uefi"), spec("bios")}) {
		uefi[id] = i%2 == 0
	}
	w.waitMirror(6)
	w.flavor("uefi", "CUSTOM_BAREMETAL_GOLD", map[string]string{"capabilities:boot_mode": "uefi"})
	var ids []string
	for range 3 {
		ids = append(ids, w.boot("uefi"))
	}
	for _, id := range ids {
		s := w.waitStatus(id, fsm.StatusActive)
		if !uefi[s.NodeUUID] {
			t.Fatalf("server %s landed on node %s, which is not uefi", id, s.NodeUUID)
		}
	}
	s := w.waitStatus(w.boot("uefi"), fsm.StatusError)
	if s.Host != "" || s.Fault == nil || !strings.Contains(s.Fault.Message, "No valid host") ||
		!strings.Contains(s.Fault.Message, "boot_mode:uefi") {
		t.Fatalf("with only bios nodes free: host %q fault %+v", s.Host, s.Fault)
	}
	for _, n := range w.sim.Nodes() {
		if !uefi[n.UUID] && (n.InstanceUUID != "" || n.AllocationUUID != "") {
			t.Fatalf("bios node %s was claimed (instance %q, allocation %q)", n.UUID, n.InstanceUUID, n.AllocationUUID)
		}
	}
}

// A boot right after nodes are enrolled in Ironic, long before the next
// periodic sync, is built: the leader refreshes the mirror first.
func TestBootRightAfterEnrollment(t *testing.T) {
	w := newWorld(t, 3, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond})
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	// Syncs every hour from now on; the first, at their start, sees this
	// silver node, and nothing after it.
	w.resync(time.Hour, func() { w.sim.SeedNodes(1, "baremetal-silver") })
	w.waitMirror(1)
	w.sim.SeedNodes(2, "baremetal-gold")
	id := w.boot("gold")
	if s := w.waitStatus(id, fsm.StatusActive); s.NodeUUID == "" {
		t.Fatalf("server %s is ACTIVE without a node", id)
	}
	w.waitStatus(w.boot("gold"), fsm.StatusActive)
	// No gold node left: ERROR, after one more refresh.
	if s := w.waitStatus(w.boot("gold"), fsm.StatusError); s.Host != "" || !strings.Contains(s.Fault.Message, "No valid host") {
		t.Fatalf("a server without a node: host %q fault %+v", s.Host, s.Fault)
	}
}
