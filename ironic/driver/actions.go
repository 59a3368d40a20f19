package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

var _ compute.Actor = (*Driver)(nil)

// Act carries out a server's action on its Ironic node through Ironic's
// power and rebuild APIs: stop and start set the power state (so does
// the power-off that ends the rebuild of a stopped server), a reboot
// asks for a soft reboot (falling back to a power cycle when the node's
// driver cannot do it softly, as Nova does) or a hard one, a rebuild
// redeploys the node with the new image and a fresh config drive. Each
// side effect is taken at most once per action, whoever owns the server
// (see take). Every request of the action carries the id of the user's
// request (ironic.WithRequestID). It holds its worker until Ironic is done.
func (d *Driver) Act(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if s.NodeUUID == "" {
		return compute.Permanent("server %s holds no Ironic node to %s", s.ID, s.Action.Kind)
	}
	wctx, cancel := context.WithTimeout(ctx, d.cfg.DeployTimeout)
	defer cancel()
	wctx = ironic.WithRequestID(wctx, s.Action.RequestID)
	switch s.Action.Kind {
	case fsm.ActionStop, fsm.ActionRebuildStop:
		// After a rebuild of a stopped server, Nova's compute manager
		// stops it again with clean_shutdown=False: a hard power-off.
		return d.take(wctx, h, s, d.powerEffect(s.NodeUUID, ironic.PowerOff, ironic.PowerOff))
	case fsm.ActionStart:
		return d.take(wctx, h, s, d.powerEffect(s.NodeUUID, ironic.PowerOn, ironic.PowerOn))
	case fsm.ActionRebootHard:
		return d.take(wctx, h, s, d.powerEffect(s.NodeUUID, ironic.PowerReboot, ironic.PowerOn))
	case fsm.ActionReboot:
		if in := s.Action.Intent; in != nil && in.Step == ironic.PowerReboot {
			// An earlier attempt already fell back to a power cycle.
			return d.take(wctx, h, s, d.powerEffect(s.NodeUUID, ironic.PowerReboot, ironic.PowerOn))
		}
		err := d.take(wctx, h, s, d.powerEffect(s.NodeUUID, ironic.PowerSoftReboot, ironic.PowerOn))
		if !errors.Is(err, errRefused) {
			return err
		}
		d.log.Info("soft reboot refused by Ironic; power cycling", "server", s.ID, "node", s.NodeUUID, "err", err)
		// The refused request changed nothing: the power cycle gets an
		// intent of its own, judged against the node as it is now.
		cur, rerr := h.Reread(s, false)
		if rerr != nil {
			return rerr
		}
		return d.take(wctx, h, cur, d.powerEffect(s.NodeUUID, ironic.PowerReboot, ironic.PowerOn))
	case fsm.ActionRebuild:
		return d.take(wctx, h, s, d.rebuildEffect(s))
	}
	return compute.Permanent("server action %q is unknown to the Ironic driver", s.Action.Kind)
}

// effect is one side effect of an action on the server's node.
type effect struct {
	step string // the intent's step
	// witness is what of the node the side effect changes as soon as
	// Ironic accepts it.
	witness func(ironic.Node) string
	// needless reports that the node is already where the side effect
	// would take it, with nothing in flight: nothing is sent.
	needless func(ironic.Node) bool
	send     func(context.Context, ironic.Node) error
	wait     func(context.Context) error // until Ironic is done
}

// take takes e at most once for s's action, whoever owns the server:
//
//   - it reads the node (which must still carry the server's reservation);
//   - if the log holds an intent for e whose witness no longer matches the
//     node, e was taken (by an earlier attempt, by this host before a
//     restart, or by the previous owner): it only waits for Ironic;
//   - if the witness still matches, it waits until whoever committed that
//     intent can no longer send e (compute.Handle.AwaitIntent) and reads
//     the node again;
//   - otherwise it commits its own intent at its epoch with the node's
//     witness (a failure stops the worker, e not sent) and sends e within
//     the intent's lease.
func (d *Driver) take(ctx context.Context, h *compute.Handle, s fsm.Server, e effect) error {
	n, err := d.actNode(ctx, h, s, e.step)
	if err != nil {
		return err
	}
	if in := s.Action.Intent; in != nil && in.Step == e.step {
		if e.witness(n) != in.Witness {
			d.log.Info("the node shows this side effect was already taken; not taking it again", "server", s.ID, "node", n.UUID,
				"step", e.step, "intent_host", in.Host, "intent_epoch", in.Epoch)
			return e.wait(ctx)
		}
		if err := h.AwaitIntent(ctx, s); err != nil {
			return err
		}
		if n, err = d.actNode(ctx, h, s, e.step); err != nil {
			return err
		}
		if e.witness(n) != in.Witness {
			d.log.Info("the node shows this side effect was taken while its intent's lease ran; not taking it again", "server", s.ID,
				"node", n.UUID, "step", e.step, "intent_host", in.Host, "intent_epoch", in.Epoch)
			return e.wait(ctx)
		}
	}
	if e.needless != nil && e.needless(n) {
		d.log.Info("the node is already where this action takes it; nothing sent", "server", s.ID, "node", n.UUID, "step", e.step)
		return nil
	}
	lease, err := h.BeginAction(ctx, s, e.step, e.witness(n))
	if err != nil {
		return err
	}
	lctx, cancel := lease.Context(ctx)
	err = e.send(lctx, n)
	cancel()
	if err != nil {
		return err
	}
	return e.wait(ctx)
}

// actNode reads the server's node right before a side effect: the log must
// still give the server to this host at its epoch with the action pending,
// and the node must still carry the server's reservation.
func (d *Driver) actNode(ctx context.Context, h *compute.Handle, s fsm.Server, what string) (ironic.Node, error) {
	cur, err := h.Reread(s, false)
	if err != nil {
		return ironic.Node{}, err
	}
	if cur.Action == nil || cur.Action.Kind != s.Action.Kind || !cur.Action.RequestedAt.Equal(s.Action.RequestedAt) {
		return ironic.Node{}, fmt.Errorf("%w: server %s no longer waits for this %s", compute.ErrStop, s.ID, s.Action.Kind)
	}
	// The whole node: a power change's witness, updated_at, is not one
	// of the fields GetNode can select.
	n, err := d.ir.GetNodeDetail(ctx, s.NodeUUID)
	if err != nil {
		return n, err
	}
	if !holds(n, s) {
		return n, d.notHeld(h, s, n, what)
	}
	return n, nil
}

// stamp is an Ironic timestamp as a witness.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// powerEffect asks Ironic for power target and waits for the node to be in
// want. Ironic saves the node (its updated_at) when it takes a power
// request, so updated_at is the witness.
func (d *Driver) powerEffect(node, target, want string) effect {
	e := effect{
		step:    target,
		witness: func(n ironic.Node) string { return stamp(n.UpdatedAt) },
		send: func(ctx context.Context, n ironic.Node) error {
			err := d.ir.SetPowerState(ctx, n.UUID, target)
			if err != nil && refused(err) {
				if target == ironic.PowerSoftReboot {
					return fmt.Errorf("%w: %w", errRefused, err)
				}
				return compute.Permanent("Ironic refused %q for node %s: %v", target, n.UUID, err)
			}
			return err
		},
		wait: func(ctx context.Context) error { return d.waitPower(ctx, node, target, want) },
	}
	if target == want { // stop and start: a node already there needs nothing
		e.needless = func(n ironic.Node) bool { return n.PowerState == want && n.TargetPowerState == "" }
	}
	return e
}

// waitPower waits for node to reach want after target.
func (d *Driver) waitPower(ctx context.Context, node, target, want string) error {
	if _, err := d.ir.WaitPowerState(ctx, node, want); err != nil {
		if errors.Is(err, ironic.ErrDeployFailed) {
			return compute.Permanent("Ironic node %s did not reach %q after %q: %v", node, want, target, err)
		}
		return err
	}
	return nil
}

// rebuildEffect redeploys the node with the action's image. A rebuild
// changes the node's provision state at once, so provision_updated_at is
// the witness (the instance_info written before it changes updated_at, not
// that).
func (d *Driver) rebuildEffect(s fsm.Server) effect {
	next := s
	next.ImageRef = s.Action.ImageRef
	spec := ironic.DeploySpec{ImageSource: next.ImageRef, DisplayName: s.Name, ConfigDriveData: configDrive(next)}
	return effect{
		step:    "rebuild",
		witness: func(n ironic.Node) string { return stamp(n.ProvisionUpdatedAt) },
		send: func(ctx context.Context, n ironic.Node) error {
			if err := d.ir.Rebuild(ctx, n.UUID, spec); err != nil {
				if refusedDeploy(err) || errors.Is(err, ironic.ErrConflict) {
					return compute.Permanent("Ironic refused to rebuild node %s with image %s: %v", n.UUID, next.ImageRef, err)
				}
				return err
			}
			return nil
		},
		wait: func(ctx context.Context) error {
			if _, err := d.ir.WaitProvisionState(ctx, s.NodeUUID, ironic.StateActive); err != nil {
				if errors.Is(err, ironic.ErrDeployFailed) {
					return compute.Permanent("Rebuild of Ironic node %s failed: %v", s.NodeUUID, err)
				}
				return err
			}
			return nil
		},
	}
}

// refused tells Ironic's refusal of a request (4xx but a lock) from a
// transient failure.
func refused(err error) bool {
	st := ironic.StatusOf(err)
	return st >= 400 && st < 500 && st != 409
}
