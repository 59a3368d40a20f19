package driver

import (
	"context"
	"errors"
	"slices"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// The Neutron ports of a bare-metal server live in neutron/serverports,
// which every virt driver shares; what is Ironic's stays here: the VIF
// attach, passed to the port's Attach as its plug, and the VIF detach
// before the ports are released, each after its port intent at the
// owner's epoch.

// attachVIFs gives s's node a VIF for each of its ports (with Neutron,
// each port created or taken over and recorded first, then bound to the
// node and attached under its intent), and returns how many.
func (d *Driver) attachVIFs(ctx context.Context, h *compute.Handle, s fsm.Server, node string) (int, error) {
	if d.ports == nil {
		vifs := s.VIFs()
		for _, vif := range vifs {
			if err := d.fence(ctx, h, s, "attaching VIF "+vif); err != nil {
				return 0, err
			}
			if err := d.ir.AttachVIF(ctx, node, vif); err != nil {
				return 0, err
			}
		}
		return len(vifs), nil
	}
	ids, err := d.ports.Ensure(ctx, h, s, node)
	if err != nil {
		return 0, err
	}
	// A VIF the node already has (an earlier attempt's) is not attached
	// again: Ironic answers that it has it only after asking Neutron
	// about the port and the node's networks, which a busy Neutron pays
	// on every retry. Its port is still bound and read again. Only an
	// attempt after one that reached the attach step (the server's last
	// port intent) asks Ironic, whose listing asks Neutron too.
	var attached []string
	if in := h.Store().ServerNet(s.ID).Intent; in != nil && in.Step == fsm.PortStepAttach {
		if attached, err = d.ir.ListVIFs(ctx, node); err != nil {
			return 0, err
		}
	}
	for _, id := range ids {
		if err := d.fence(ctx, h, s, "attaching VIF "+id); err != nil {
			return 0, err
		}
		plug := func(ctx context.Context) error {
			if slices.Contains(attached, id) {
				return nil
			}
			return d.ir.AttachVIF(ctx, node, id)
		}
		if err := d.ports.Attach(ctx, h, s, id, node, plug); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// vifsOf are the VIFs the driver attaches to and detaches from s's node:
// its recorded Neutron ports with Neutron, else corral's own ids.
func (d *Driver) vifsOf(h *compute.Handle, s fsm.Server) []string {
	if d.ports == nil {
		return s.VIFs()
	}
	return d.ports.Recorded(h, s)
}

// detachVIF detaches one VIF of s from node, after its intent with
// Neutron; a VIF already gone is no error.
func (d *Driver) detachVIF(ctx context.Context, h *compute.Handle, s fsm.Server, node, vif string) error {
	if d.ports != nil {
		if err := d.ports.Intent(ctx, h, s, fsm.PortStepDetach, "", vif); err != nil {
			return err
		}
	}
	if err := d.ir.DetachVIF(ctx, node, vif); err != nil && !errors.Is(err, ironic.ErrNotFound) {
		return err
	}
	return nil
}

// releasePorts, once the node is undeployed (or was never reserved),
// detaches what VIFs the node still carries, each after its intent, then
// releases the server's ports (neutron/serverports: corral's deleted, the
// user's given back). node "" means no node.
func (d *Driver) releasePorts(ctx context.Context, h *compute.Handle, s fsm.Server, node string) error {
	if err := d.ports.Known(h, s); err != nil {
		return err
	}
	if node != "" {
		vifs, err := d.ir.ListVIFs(ctx, node)
		if err != nil {
			return err
		}
		for _, vif := range vifs {
			if err := d.detachVIF(ctx, h, s, node, vif); err != nil {
				return err
			}
		}
	}
	return d.ports.Release(ctx, h, s)
}

var _ compute.BuildFailer = (*Driver)(nil)

// BuildFailed gives back the Neutron ports of a build that ends in ERROR,
// as Nova's compute manager does on a failed build (unplug the VIFs,
// deallocate the networks): each VIF detached from the node while the
// node still carries the server's reservation, the ports corral created
// deleted, the user's given back, each after its intent at the owner's
// epoch. The node itself stays the server's until it is deleted.
func (d *Driver) BuildFailed(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if d.ports == nil {
		return nil
	}
	cur, err := h.Reread(s, false)
	if err != nil {
		return err
	}
	node := cur.NodeUUID
	if node != "" {
		n, err := d.ir.GetNode(ctx, node)
		switch {
		case errors.Is(err, ironic.ErrNotFound):
			node = ""
		case err != nil:
			return err
		case !holds(n, cur):
			d.log.Warn("the failed build's node no longer carries its reservation; its VIFs are not touched", "server", cur.ID, "node", node)
			node = ""
		}
	}
	if node != "" {
		for _, vif := range d.vifsOf(h, cur) {
			if err := d.detachVIF(ctx, h, cur, node, vif); err != nil {
				return err
			}
		}
	}
	return d.releasePorts(ctx, h, cur, node)
}
