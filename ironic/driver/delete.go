package driver

import (
	"context"
	"errors"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// Delete undeploys the server's node, makes sure Ironic holds nothing for
// it any more and releases the reservation; the manager then commits
// DELETED.
func (d *Driver) Delete(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if s.NodeUUID == "" {
		if err := d.dropStrayClaims(ctx, h, s); err != nil {
			return err
		}
		if d.ports != nil {
			return d.releasePorts(ctx, h, s, "")
		}
		return nil
	}
	if err := d.undeploy(ctx, h, s); err != nil {
		return err
	}
	if d.ports != nil {
		if err := d.releasePorts(ctx, h, s, s.NodeUUID); err != nil {
			return err
		}
	}
	if _, err := h.Reread(s, false); err != nil {
		return err
	}
	return h.Commit(ctx, &fsm.ReleaseNode{ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.NodeUUID})
}

func (d *Driver) undeploy(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	n, err := d.ir.GetNode(ctx, s.NodeUUID)
	if errors.Is(err, ironic.ErrNotFound) {
		d.log.Warn("the server's Ironic node no longer exists", "server", s.ID, "node", s.NodeUUID)
		return nil
	}
	if err != nil {
		return err
	}
	if holds(n, s) {
		for _, vif := range d.vifsOf(h, s) {
			if err := d.fence(ctx, h, s, "detaching VIF "+vif); err != nil {
				return err
			}
			if err := d.detachVIF(ctx, h, s, n.UUID, vif); err != nil { // ports.go
				return err
			}
		}
		switch n.ProvisionState {
		case "available", "manageable", "enroll":
		default:
			if _, err := h.Reread(s, false); err != nil {
				return err
			}
			state := n.ProvisionState
			if d.cfg.Wait == WaitWatch && (state == ironic.StateDeploying || state == ironic.StateWaitCallBack) {
				// Ironic undeploys only once the deploy ends: wait for that
				// without a worker, then come back here.
				return d.await(h, s, n.UUID, awaitSettled, state)
			}
			if state != "deleting" && state != "cleaning" && state != "clean wait" {
				if err := d.fence(ctx, h, s, "undeploying"); err != nil {
					return err
				}
				if err := d.ir.Undeploy(ctx, n.UUID); err != nil {
					return err
				}
				state = ironic.StateDeleting
			}
			if d.cfg.Wait == WaitWatch {
				// The manager commits the delete intent again at our epoch
				// before the next attempt, which finds the node available.
				return d.await(h, s, n.UUID, awaitAvailable, state)
			}
			wctx, cancel := context.WithTimeout(ctx, d.cfg.DeployTimeout)
			_, err := d.ir.WaitProvisionState(wctx, n.UUID, "available")
			cancel()
			if err != nil {
				return err
			}
			// The wait may have outlived our ownership, and a host that was
			// frozen or cut off meanwhile cannot tell from its own replica:
			// commit the intent again, at our epoch, before the next side effect.
			if err := h.Intent(ctx, s, fsm.TaskDeleting); err != nil {
				return err
			}
		}
	}
	// Undeploying removes the allocation and instance_uuid; make sure,
	// since a never-deployed node keeps them.
	if s.AllocationUUID != "" {
		if err := d.ir.DeleteAllocation(ctx, s.AllocationUUID); err != nil {
			return err
		}
	}
	if err := d.ir.ReleaseNode(ctx, n.UUID, s.ID); err != nil && !errors.Is(err, ironic.ErrNotFound) {
		return err
	}
	return nil
}

// dropStrayClaims removes what an interrupted reservation may have left in
// Ironic for a server that holds no node in the log.
func (d *Driver) dropStrayClaims(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if d.mode == ReserveAllocations {
		return d.ir.DeleteAllocation(ctx, s.ID)
	}
	for _, n := range h.Store().Nodes() {
		if n.InstanceUUID == s.ID {
			if err := d.ir.ReleaseNode(ctx, n.UUID, s.ID); err != nil && !errors.Is(err, ironic.ErrNotFound) {
				return err
			}
		}
	}
	return nil
}
