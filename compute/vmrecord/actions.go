package vmrecord

import (
	"context"
	"fmt"
	"strconv"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

var _ compute.Actor = (*Driver)(nil)

// Act records a server action on a VM: a stop marks it off (so does the
// stop after the rebuild of a stopped server), a start or a reboot on, a
// rebuild changes its image. Like every driver it commits the
// intent first, with the VM's count of actions as the witness, so an
// action is recorded once. A VM the driver does not hold is an error worth
// retrying (its spawn has not been recorded yet).
func (d *Driver) Act(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	d.mu.Lock()
	r, ok := d.vms[s.ID]
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("the VM record driver holds no VM for server %s", s.ID)
	}
	witness := strconv.Itoa(r.Actions)
	if in := s.Action.Intent; in != nil && in.Step == s.Action.Kind && in.Witness != witness {
		return nil // recorded by an earlier attempt
	}
	if _, err := h.BeginAction(ctx, s, s.Action.Kind, witness); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r = d.vms[s.ID]
	switch s.Action.Kind {
	case fsm.ActionStop, fsm.ActionRebuildStop:
		r.Off = true
	case fsm.ActionStart, fsm.ActionReboot, fsm.ActionRebootHard:
		r.Off = false
	case fsm.ActionRebuild:
		r.Image, r.Off = s.Action.ImageRef, false
	}
	r.Actions++
	d.vms[s.ID] = r
	return nil
}
