package fsm

import "fmt"

// ReserveNodeAndTask is ReserveNode followed, in the same entry, by the
// owner's next intent: the server's task state becomes TaskState (the
// owner's "spawning" before it deploys), unless a delete was requested
// meanwhile. It saves the owner one round trip through the log per boot;
// both steps are fenced by the same epoch, so the deploy that follows is
// still preceded by an intent committed at the owner's epoch. Owners send
// it only once every live peer knows the type (cluster.Node.CommandKnown).
type ReserveNodeAndTask struct {
	ReserveNode
	TaskState string `json:"task_state"`
}

// Type implements Command.
func (*ReserveNodeAndTask) Type() CommandType { return CmdReserveNodeAndTask }

func init() {
	register[ReserveNodeAndTask](CmdReserveNodeAndTask, "ReserveNodeAndTask", applyReserveNodeAndTask)
}

func applyReserveNodeAndTask(st *state, c *ReserveNodeAndTask) (any, error) {
	if c.TaskState == "" || c.TaskState == TaskDeleting {
		return nil, fmt.Errorf("%w: task state %q cannot follow a reservation", ErrInvalid, c.TaskState)
	}
	if _, err := applyReserveNode(st, &c.ReserveNode); err != nil {
		return nil, err
	}
	s := st.servers[c.ServerID]
	if s.TaskState != TaskDeleting {
		// A requested delete stays requested until the owner finishes it.
		s.TaskState = c.TaskState
	}
	st.putServer(s)
	return cloneServer(s), nil
}
