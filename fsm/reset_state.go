package fsm

import "fmt"

// ResetServerState is an admin's os-resetState: the server's status
// becomes ACTIVE or ERROR and its task state is cleared, as Nova sets
// vm_state and task_state=None; its fault stays.
//
// It is an override, not a cancel: the owner's work goes on, fenced as
// before by the owner's epoch, and the state the admin set is kept from
// stale outcomes the way Nova keeps it (instance.save with an expected
// task state):
//
//   - an action in progress (stop, start, reboot, rebuild) is dropped
//     with the task state, so the owner's FinishServerAction for it is
//     refused (no such action in progress, or another one requested
//     later): the admin's state stands, as Nova's driver fails to save
//     its outcome over a cleared task state, and the owner's worker stops
//     once it reads the server needs nothing more; a dropped rebuild
//     leaves the server its new image, as Nova's API set image_ref when
//     it took the rebuild;
//   - a build is not cancelled: an outcome its owner still commits
//     (ACTIVE on its node, or ERROR with its fault) is the server's, as
//     SetServerTask is fenced by the epoch alone; an owner that was only
//     waiting on the backend stops waiting (the server needs nothing
//     more) and the server stays as the admin set it, holding its node
//     and claim until it is deleted;
//   - a requested delete stays requested (task state "deleting"): the
//     owner is carrying it out and its outcome, DELETED, stands.
type ResetServerState struct {
	Meta
	ID     string       `json:"id"`
	Status ServerStatus `json:"status"` // StatusActive or StatusError
}

// Type implements Command.
func (*ResetServerState) Type() CommandType { return CmdResetServerState }

func init() {
	register[ResetServerState](CmdResetServerState, "ResetServerState", applyResetServerState)
}

func applyResetServerState(st *state, c *ResetServerState) (any, error) {
	if c.Status != StatusActive && c.Status != StatusError {
		return nil, fmt.Errorf("%w: a server's state is reset to %s or %s, not %q", ErrInvalid, StatusActive, StatusError, c.Status)
	}
	if len(c.RequestID) > maxRequestIDLen {
		return nil, fmt.Errorf("%w: request id is %d characters, more than %d", ErrInvalid, len(c.RequestID), maxRequestIDLen)
	}
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	s = cloneServer(s)
	s.Status = c.Status
	if s.TaskState != TaskDeleting {
		s.TaskState = ""
	}
	if s.Action != nil {
		if s.Action.Kind == ActionRebuild {
			s.ImageRef = s.Action.ImageRef
		}
		s.Action = nil
		clearAdminPass(&s) // the rebuild that was to deliver it is dropped
	}
	s.UpdatedAt = c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}
