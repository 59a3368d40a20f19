package fake

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

var _ compute.Actor = (*Driver)(nil)

// Act records a server action on a VM: a stop marks it off, a start or a
// reboot on, a rebuild changes its image. A VM the driver does not hold
// is an error worth retrying (its spawn has not been recorded yet).
func (d *Driver) Act(_ context.Context, _ *compute.Handle, s fsm.Server) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.vms[s.ID]
	if !ok {
		return fmt.Errorf("the fake driver holds no VM for server %s", s.ID)
	}
	switch s.Action.Kind {
	case fsm.ActionStop:
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
