package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// holds reports whether Ironic shows the node reserved for the server,
// the way the server reserved it: by its allocation when it has one,
// else by the node's instance_uuid.
func holds(n ironic.Node, s fsm.Server) bool {
	if s.AllocationUUID != "" {
		return n.AllocationUUID == s.AllocationUUID
	}
	return n.InstanceUUID == s.ID
}

// fence reads the server's node from Ironic immediately before a side
// effect ("what") and stops unless the node still carries the server's
// reservation. Ironic has no conditional writes, so this leaves one
// round trip between the check and the effect; an owner paused inside
// it may still deploy a node for nobody, which the leader's reaper
// (ironic/mirror) undeploys.
func (d *Driver) fence(ctx context.Context, h *compute.Handle, s fsm.Server, what string) error {
	n, err := d.ir.GetNode(ctx, s.NodeUUID)
	if err != nil {
		return err
	}
	if !holds(n, s) {
		return d.notHeld(h, s, n, what)
	}
	return nil
}

// notHeld is the error of a side effect not made because Ironic shows the
// node without the server's reservation.
func (d *Driver) notHeld(h *compute.Handle, s fsm.Server, n ironic.Node, what string) error {
	d.log.Warn("the server's Ironic node no longer carries its reservation; not touching it", "server", s.ID,
		"node", n.UUID, "step", what, "allocation", n.AllocationUUID, "instance", n.InstanceUUID, "state", n.ProvisionState)
	err := fmt.Errorf("%w: node %s (allocation %q, instance %q) before %s for server %s",
		ErrNotHeld, n.UUID, n.AllocationUUID, n.InstanceUUID, what, s.ID)
	if _, ferr := h.Reread(s, false); errors.Is(ferr, fsm.ErrFenced) {
		return fmt.Errorf("%w: %w", ferr, err)
	}
	return err
}
