package driver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

func (w *world) simNode(uuid string) sim.NodeState {
	w.t.Helper()
	for _, n := range w.sim.Nodes() {
		if n.UUID == uuid {
			return n
		}
	}
	w.t.Fatalf("Ironic has no node %s", uuid)
	return sim.NodeState{}
}

// act requests an action and waits for the server to reach want with no task.
func (w *world) act(id, kind, image string, want fsm.ServerStatus) fsm.Server {
	w.t.Helper()
	if err := w.propose(&fsm.RequestServerAction{ID: id, Kind: kind, ImageRef: image}); err != nil {
		w.t.Fatalf("%s: %v", kind, err)
	}
	return w.waitStatus(id, want)
}

func TestServerActionsThroughIronic(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond, PowerDelay: 20 * time.Millisecond})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	s := w.waitStatus(w.boot("gold"), fsm.StatusActive)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power on" {
		// The simulator leaves a deployed node off; start it first.
		s = w.act(s.ID, fsm.ActionRebootHard, "", fsm.StatusActive)
	}
	if got := w.simNode(s.NodeUUID).PowerState; got != "power on" {
		t.Fatalf("after a hard reboot the node is %q", got)
	}

	s = w.act(s.ID, fsm.ActionStop, "", fsm.StatusShutoff)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power off" {
		t.Fatalf("stopped server's node is %q", got)
	}
	s = w.act(s.ID, fsm.ActionStart, "", fsm.StatusActive)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power on" {
		t.Fatalf("started server's node is %q", got)
	}
	s = w.act(s.ID, fsm.ActionReboot, "", fsm.StatusActive)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power on" {
		t.Fatalf("rebooted server's node is %q", got)
	}

	s = w.act(s.ID, fsm.ActionRebuild, "http://images.example/v2.qcow2", fsm.StatusActive)
	n := w.simNode(s.NodeUUID)
	if s.ImageRef != "http://images.example/v2.qcow2" || n.InstanceInfo["image_source"] != s.ImageRef ||
		n.ProvisionState != "active" || n.InstanceUUID != s.ID {
		t.Fatalf("rebuilt: server image %s, node %+v", s.ImageRef, n)
	}
	if cd := w.sim.ConfigDrive(s.NodeUUID); len(cd) == 0 {
		t.Fatal("the rebuild carried no config drive")
	}
}

func TestStopFinishesOnNewOwnerAfterFailover(t *testing.T) {
	w := newWorld(t, 3, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond, PowerDelay: 3 * time.Second})
	w.sim.SeedNodes(3, "baremetal-gold")
	w.waitMirror(3)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	leader := w.leader().Name
	var s fsm.Server
	for s.Host == "" || s.Host == leader {
		s = w.waitStatus(w.boot("gold"), fsm.StatusActive)
	}
	victim := s.Host
	// The simulator leaves a deployed node off, and a stop of a node
	// already off sends nothing: power it on first.
	s = w.act(s.ID, fsm.ActionRebootHard, "", fsm.StatusActive)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power on" {
		t.Fatalf("after a hard reboot the node is %q", got)
	}
	before := w.sim.Requests("PUT", "/v1/nodes/"+s.NodeUUID+"/states/power")
	if err := w.propose(&fsm.RequestServerAction{ID: s.ID, Kind: fsm.ActionStop}); err != nil {
		t.Fatal(err)
	}
	// Wait until the owner asked Ironic, then kill it mid-transition.
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, n := range w.sim.Nodes() {
			if n.UUID == s.NodeUUID && w.sim.Requests("PUT", "/v1/nodes/"+s.NodeUUID+"/states/power") > before {
				return nil
			}
		}
		return fmt.Errorf("no power request for node %s yet", s.NodeUUID)
	})
	w.kill(victim)
	got := w.waitStatus(s.ID, fsm.StatusShutoff)
	if got.Host == victim || got.Epoch != s.Epoch+1 {
		t.Fatalf("the stop finished on %s at epoch %d, want a new owner at %d", got.Host, got.Epoch, s.Epoch+1)
	}
	if n := w.simNode(s.NodeUUID); n.PowerState != "power off" {
		t.Fatalf("node %s is %q after the stop", s.NodeUUID, n.PowerState)
	}
}

// A rebuild of a stopped server ends SHUTOFF, as in Nova: Ironic
// redeploys the node (which boots it), then the owner powers it off
// again; both are events of the rebuild's action.
func TestRebuildOfAStoppedServerThroughIronic(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond, PowerDelay: 20 * time.Millisecond,
		DeployPowersOn: true})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	s := w.waitStatus(w.boot("gold"), fsm.StatusActive)
	s = w.act(s.ID, fsm.ActionStop, "", fsm.StatusShutoff)
	if got := w.simNode(s.NodeUUID).PowerState; got != "power off" {
		t.Fatalf("stopped server's node is %q", got)
	}
	powers := w.sim.Requests("PUT", "/v1/nodes/"+s.NodeUUID+"/states/power")

	s = w.act(s.ID, fsm.ActionRebuild, "http://images.example/v2.qcow2", fsm.StatusShutoff)
	n := w.simNode(s.NodeUUID)
	if s.ImageRef != "http://images.example/v2.qcow2" || n.InstanceInfo["image_source"] != s.ImageRef || n.ProvisionState != "active" {
		t.Fatalf("rebuilt: server image %s, node %+v", s.ImageRef, n)
	}
	if n.PowerState != "power off" || w.sim.Requests("PUT", "/v1/nodes/"+s.NodeUUID+"/states/power") != powers+1 {
		t.Fatalf("after the rebuild of a stopped server its node is %q after %d power requests, want off after one",
			n.PowerState, w.sim.Requests("PUT", "/v1/nodes/"+s.NodeUUID+"/states/power")-powers)
	}
	acts := w.leader().Node.Store().InstanceActions(s.ID)
	rb := acts[len(acts)-1]
	var events []string
	for _, e := range rb.Events {
		events = append(events, e.Event+" "+e.Result)
	}
	if rb.Action != fsm.ActionRebuild || fmt.Sprint(events) != "[compute_rebuild_instance Success compute_stop_instance Success]" {
		t.Fatalf("the rebuild's action: %s %v", rb.Action, events)
	}
}
