package ironic

import (
	"context"
	"errors"

	"github.com/corral-dev/corral/fsm"
)

// delete undeploys the server's node, makes sure Ironic holds nothing for
// it any more, releases the reservation and marks the server DELETED.
func (d *Driver) delete(ctx context.Context, s fsm.Server) error {
	// The intent, committed at our epoch, fences what follows: a host that
	// lost the server fails here, before touching Ironic.
	if err := d.setTask(ctx, s, "", fsm.TaskDeleting, nil); err != nil {
		return err
	}
	if s.NodeUUID != "" {
		if err := d.undeploy(ctx, s); err != nil {
			return err
		}
		if _, err := d.reread(s, false); err != nil {
			return err
		}
		if err := d.commit(ctx, &fsm.ReleaseNode{ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.NodeUUID}); err != nil {
			return err
		}
	} else if err := d.dropStrayClaims(ctx, s); err != nil {
		return err
	}
	if err := d.setTask(ctx, s, fsm.StatusDeleted, "", nil); err != nil {
		return err
	}
	d.m.deletes.Inc()
	d.log.Info("server deleted", "server", s.ID)
	return nil
}

func (d *Driver) undeploy(ctx context.Context, s fsm.Server) error {
	n, err := d.ir.GetNode(ctx, s.NodeUUID)
	if errors.Is(err, ErrNotFound) {
		d.log.Warn("the server's Ironic node no longer exists", "server", s.ID, "node", s.NodeUUID)
		return nil
	}
	if err != nil {
		return err
	}
	ours := n.InstanceUUID == s.ID || (s.AllocationUUID != "" && n.AllocationUUID == s.AllocationUUID)
	if ours {
		for _, vif := range s.VIFs() {
			if err := d.ir.DetachVIF(ctx, n.UUID, vif); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		switch n.ProvisionState {
		case "available", "manageable", "enroll":
		default:
			if _, err := d.reread(s, false); err != nil {
				return err
			}
			if n.ProvisionState != "deleting" && n.ProvisionState != "cleaning" && n.ProvisionState != "clean wait" {
				if err := d.ir.Undeploy(ctx, n.UUID); err != nil {
					return err
				}
			}
			wctx, cancel := context.WithTimeout(ctx, d.cfg.DeployTimeout)
			_, err := d.ir.WaitProvisionState(wctx, n.UUID, "available")
			cancel()
			if err != nil {
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
	if err := d.ir.ReleaseNode(ctx, n.UUID, s.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// dropStrayClaims removes what an interrupted reservation may have left in
// Ironic for a server that holds no node in the log.
func (d *Driver) dropStrayClaims(ctx context.Context, s fsm.Server) error {
	if d.mode == ReserveAllocations {
		return d.ir.DeleteAllocation(ctx, s.ID)
	}
	for _, n := range d.c.Store().Nodes() {
		if n.InstanceUUID == s.ID {
			if err := d.ir.ReleaseNode(ctx, n.UUID, s.ID); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	return nil
}
