package driver

import (
	"context"
	"errors"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// Interfaces attached to and detached from a running bare-metal server
// (Nova's os-interface): the port made or taken over through
// neutron/serverports, then attached as a VIF of the server's node by
// Ironic (which binds it on an active node), each side effect after its
// port intent at the owner's epoch.

var _ compute.InterfaceActor = (*Driver)(nil)

// AttachInterface gives s the port of req and attaches it as a VIF of its
// node. Ironic's refusal (no free physical port on the node, 400) fails
// the attach, and the port is given back (deleted when corral made it),
// as Nova deallocates it.
func (d *Driver) AttachInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest) (string, error) {
	if d.ports == nil {
		return "", compute.Permanent("Failed to attach network adapter device to %s: corral has no [neutron]", s.ID)
	}
	node := s.NodeUUID
	if node == "" {
		return "", compute.Permanent("Failed to attach network adapter device to %s: the server has no node", s.ID)
	}
	if err := d.fence(ctx, h, s, "attaching an interface"); err != nil {
		return "", err
	}
	id, err := d.ports.EnsureInterface(ctx, h, s, req, node)
	if err != nil {
		return "", err
	}
	plug := func(ctx context.Context) error {
		err := d.ir.AttachVIF(ctx, node, id)
		if errors.Is(err, ironic.ErrInvalid) {
			return compute.Permanent("Failed to attach network adapter device to %s: Ironic: %s", s.ID, ironic.FaultOf(err))
		}
		return err
	}
	if err := d.ports.Attach(ctx, h, s, id, node, plug); err != nil {
		var pe *compute.PermanentError
		if errors.As(err, &pe) {
			if rerr := d.ports.ReleaseInterface(ctx, h, s, id); rerr != nil {
				return "", rerr
			}
		}
		return "", err
	}
	return id, nil
}

// DetachInterface detaches req's port from s's node (after its intent)
// and releases it: deleted when corral made it, given back when the
// user's.
func (d *Driver) DetachInterface(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.InterfaceRequest) error {
	if d.ports == nil {
		return compute.Permanent("Failed to detach network adapter device from %s: corral has no [neutron]", s.ID)
	}
	if s.NodeUUID != "" {
		if err := d.fence(ctx, h, s, "detaching an interface"); err != nil {
			return err
		}
		if err := d.detachVIF(ctx, h, s, s.NodeUUID, req.PortID); err != nil {
			return err
		}
	}
	return d.ports.ReleaseInterface(ctx, h, s, req.PortID)
}

var _ compute.SecurityGroupActor = (*Driver)(nil)

// ChangeSecurityGroups changes the security groups of a bare-metal
// server's ports: Neutron's alone (Ironic's flat and neutron network
// interfaces leave them to Neutron's mechanism drivers).
func (d *Driver) ChangeSecurityGroups(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.SecurityGroupRequest) (compute.SecurityGroupOutcome, error) {
	if d.ports == nil {
		return compute.SecurityGroupOutcome{Code: 400, Fault: "Network driver does not support this function."}, nil
	}
	return d.ports.ChangeSecurityGroups(ctx, h, s, req)
}
