package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

var _ compute.Actor = (*Driver)(nil)

// Act carries out a server's action on its Ironic node through Ironic's
// power and rebuild APIs: stop and start set the power state, a reboot
// asks for a soft reboot (falling back to a power cycle when the node's
// driver cannot do it softly, as Nova does) or a hard one, a rebuild
// redeploys the node with the new image and a fresh config drive. Each
// side effect is fenced like a deploy (the node still carries the
// server's reservation and the log still gives the server to this host at
// its epoch), and each is safe to repeat, so a new owner resumes it.
// It holds its worker until Ironic is done.
func (d *Driver) Act(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if s.NodeUUID == "" {
		return compute.Permanent("server %s holds no Ironic node to %s", s.ID, s.Action.Kind)
	}
	wctx, cancel := context.WithTimeout(ctx, d.cfg.DeployTimeout)
	defer cancel()
	switch s.Action.Kind {
	case fsm.ActionStop:
		return d.power(wctx, h, s, ironic.PowerOff, ironic.PowerOff)
	case fsm.ActionStart:
		return d.power(wctx, h, s, ironic.PowerOn, ironic.PowerOn)
	case fsm.ActionRebootHard:
		return d.power(wctx, h, s, ironic.PowerReboot, ironic.PowerOn)
	case fsm.ActionReboot:
		err := d.power(wctx, h, s, ironic.PowerSoftReboot, ironic.PowerOn)
		if err != nil && refused(err) {
			d.log.Info("soft reboot refused by Ironic; power cycling", "server", s.ID, "node", s.NodeUUID, "err", err)
			return d.power(wctx, h, s, ironic.PowerReboot, ironic.PowerOn)
		}
		return err
	case fsm.ActionRebuild:
		return d.rebuild(wctx, h, s)
	}
	return compute.Permanent("server action %q is unknown to the Ironic driver", s.Action.Kind)
}

// refused tells Ironic's refusal of a request (4xx but a lock) from a
// transient failure.
func refused(err error) bool {
	st := ironic.StatusOf(err)
	return st >= 400 && st < 500 && st != 409
}

// power asks for target and waits for the node to be in want.
func (d *Driver) power(ctx context.Context, h *compute.Handle, s fsm.Server, target, want string) error {
	if err := d.actFence(ctx, h, s, target); err != nil {
		return err
	}
	if err := d.ir.SetPowerState(ctx, s.NodeUUID, target); err != nil {
		if refused(err) && target != ironic.PowerSoftReboot {
			return compute.Permanent("Ironic refused %q for node %s: %v", target, s.NodeUUID, err)
		}
		return err
	}
	if _, err := d.ir.WaitPowerState(ctx, s.NodeUUID, want); err != nil {
		if errors.Is(err, ironic.ErrDeployFailed) {
			return compute.Permanent("Ironic node %s did not reach %q: %v", s.NodeUUID, want, err)
		}
		return err
	}
	return nil
}

// rebuild redeploys the node with the action's image and waits.
func (d *Driver) rebuild(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if err := d.actFence(ctx, h, s, "rebuilding"); err != nil {
		return err
	}
	next := s
	next.ImageRef = s.Action.ImageRef
	spec := ironic.DeploySpec{ImageSource: next.ImageRef, DisplayName: s.Name, ConfigDriveData: configDrive(next)}
	if err := d.ir.Rebuild(ctx, s.NodeUUID, spec); err != nil {
		if refusedDeploy(err) || errors.Is(err, ironic.ErrConflict) {
			return compute.Permanent("Ironic refused to rebuild node %s with image %s: %v", s.NodeUUID, next.ImageRef, err)
		}
		return err
	}
	if _, err := d.ir.WaitProvisionState(ctx, s.NodeUUID, ironic.StateActive); err != nil {
		if errors.Is(err, ironic.ErrDeployFailed) {
			return compute.Permanent("Rebuild of Ironic node %s failed: %v", s.NodeUUID, err)
		}
		return err
	}
	return nil
}

// actFence checks, before a side effect, that the log still gives the
// server to this host at its epoch with the action pending, and that
// Ironic's node still carries the server's reservation.
func (d *Driver) actFence(ctx context.Context, h *compute.Handle, s fsm.Server, what string) error {
	cur, err := h.Reread(s, false)
	if err != nil {
		return err
	}
	if cur.Action == nil || cur.Action.Kind != s.Action.Kind {
		return fmt.Errorf("%w: server %s no longer waits for %s", compute.ErrStop, s.ID, s.Action.Kind)
	}
	return d.fence(ctx, h, s, what)
}
