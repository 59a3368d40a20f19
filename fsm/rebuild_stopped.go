package fsm

import (
	"fmt"
	"time"
)

// A rebuild of a stopped server ends stopped, as in Nova: its compute
// manager redeploys the instance (which the driver leaves running), sets
// it ACTIVE with task_state None, then ACTIVE and powering-off, and calls
// stop_instance (a hard power-off), whose event compute_stop_instance
// joins the rebuild's action; the server ends SHUTOFF.
//
// Here the owner commits StopAfterRebuild once the node is redeployed:
// the server takes the new image and is ACTIVE and powering-off, its
// action the ActionRebuildStop of the same request, which the owner then
// carries out like a stop (an intent at its epoch, the power-off, and
// FinishServerAction: SHUTOFF). Older peers know neither the command nor
// the action; the owner sends the command only once every live peer
// knows it (until then such a rebuild ends ACTIVE, as it always did), and
// a snapshot holding the action is written in format 5, which older peers
// refuse.

// StopAfterRebuild is the owner's outcome of the redeploy of a rebuild
// asked of a stopped server: done; the server is to be stopped again.
type StopAfterRebuild struct {
	Meta
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Epoch       uint64    `json:"epoch"`
	RequestedAt time.Time `json:"requested_at"` // the rebuild's
}

// Type implements Command.
func (*StopAfterRebuild) Type() CommandType { return CmdStopAfterRebuild }

func init() {
	register[StopAfterRebuild](CmdStopAfterRebuild, "StopAfterRebuild", applyStopAfterRebuild)
}

func applyStopAfterRebuild(st *state, c *StopAfterRebuild) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	switch a := s.Action; {
	case a == nil || a.Kind != ActionRebuild || s.TaskState != TaskRebuilding:
		return nil, fmt.Errorf("%w: server %s has no rebuild in progress (task %q)", ErrConflict, c.ID, s.TaskState)
	case !c.RequestedAt.Equal(a.RequestedAt):
		return nil, fmt.Errorf("%w: server %s has another rebuild in progress (requested at %s)", ErrConflict, c.ID, a.RequestedAt.Format(time.RFC3339Nano))
	case s.Status != StatusShutoff:
		return nil, fmt.Errorf("%w: server %s was not stopped when its rebuild was asked (vm_state %s)", ErrConflict, c.ID, vmStateOf(s.Status))
	}
	at := c.At.UTC()
	s = cloneServer(s)
	s.ImageRef = s.Action.ImageRef
	s.Status, s.Fault, s.TaskState = StatusActive, nil, TaskPoweringOff
	s.Action = &ServerAction{Kind: ActionRebuildStop, RequestedAt: s.Action.RequestedAt, RequestID: s.Action.RequestID}
	s.UpdatedAt = at
	clearAdminPass(&s) // the rebuild was sent
	st.putServer(s)
	return cloneServer(s), nil
}

// needsFormat5 reports whether s holds what snapshot format 4 cannot
// carry: an action older peers do not know.
func needsFormat5(s *Server) bool {
	return s.Action != nil && s.Action.Kind == ActionRebuildStop
}
