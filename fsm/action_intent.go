package fsm

import (
	"fmt"
	"time"
)

// The intents of server actions. An action's side effects on the backend
// (a power change, a redeploy) are not idempotent the way a deploy is: a
// second rebuild wipes the disk again, a second hard reboot cuts the power
// again. So the owner commits, at its epoch, the intent of each side
// effect before it takes it (StartServerAction), with a witness: what the
// backend showed of the node just before (for Ironic, the node's
// updated_at or provision_updated_at). A host that lost the server is
// refused here and takes nothing. Whoever resumes the action later (a new
// owner, or this one after a restart or a failed commit) reads the node
// again: a witness that changed means the side effect was taken, and it is
// never taken again.

// Limits of an intent's fields.
const (
	maxIntentStep    = 64
	maxIntentWitness = 256
	maxRequestIDLen  = 128
)

// ActionIntent is the side effect of an action an owner said it was about
// to take, at its epoch.
type ActionIntent struct {
	Host  string `json:"host"`
	Epoch uint64 `json:"epoch"`
	// Step names the side effect (for Ironic: the power target, or
	// "rebuild").
	Step string `json:"step"`
	// Witness is what the backend showed of the node just before: when it
	// shows something else, the side effect was taken.
	Witness string `json:"witness,omitempty"`
	// At is when the intent was committed (the leader's clock).
	At time.Time `json:"at"`
}

// StartServerAction is an owner's intent to take one side effect of the
// server's action in progress. It is refused when the sender no longer
// owns the server at Epoch, or when the action in progress is not the one
// named by Kind and RequestedAt.
type StartServerAction struct {
	Meta
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Epoch       uint64    `json:"epoch"`
	Kind        string    `json:"kind"`
	RequestedAt time.Time `json:"requested_at"`
	Step        string    `json:"step"`
	Witness     string    `json:"witness,omitempty"`
}

// Type implements Command.
func (*StartServerAction) Type() CommandType { return CmdStartServerAction }

// RequestServerActionWithID is RequestServerAction that keeps the request's
// id (Meta.RequestID) with the action, so that every side effect of the
// action reaches the backend under the id of the user's request. Used once
// every live peer knows it.
type RequestServerActionWithID struct {
	RequestServerAction
}

// Type implements Command.
func (*RequestServerActionWithID) Type() CommandType { return CmdRequestServerActionWithID }

func init() {
	register[StartServerAction](CmdStartServerAction, "StartServerAction", applyStartServerAction)
	register[RequestServerActionWithID](CmdRequestServerActionWithID, "RequestServerActionWithID", applyRequestServerActionWithID)
}

func applyRequestServerActionWithID(st *state, c *RequestServerActionWithID) (any, error) {
	if len(c.RequestID) > maxRequestIDLen {
		return nil, fmt.Errorf("%w: request id is %d characters, more than %d", ErrInvalid, len(c.RequestID), maxRequestIDLen)
	}
	return requestAction(st, &c.RequestServerAction, c.RequestID)
}

func applyStartServerAction(st *state, c *StartServerAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	switch {
	case s.Action == nil || s.Action.Kind != c.Kind || s.TaskState != actionTask[c.Kind]:
		return nil, fmt.Errorf("%w: server %s has no %s in progress (task %q)", ErrConflict, c.ID, c.Kind, s.TaskState)
	case !c.RequestedAt.Equal(s.Action.RequestedAt):
		return nil, fmt.Errorf("%w: server %s has another %s in progress (requested at %s)", ErrConflict, c.ID, c.Kind, s.Action.RequestedAt.Format(time.RFC3339Nano))
	case c.Step == "" || len(c.Step) > maxIntentStep:
		return nil, fmt.Errorf("%w: an intent's step must be 1 to %d characters", ErrInvalid, maxIntentStep)
	case len(c.Witness) > maxIntentWitness:
		return nil, fmt.Errorf("%w: an intent's witness must be at most %d characters", ErrInvalid, maxIntentWitness)
	}
	s = cloneServer(s)
	s.Action.Intent = &ActionIntent{Host: c.Host, Epoch: c.Epoch, Step: c.Step, Witness: c.Witness, At: c.At.UTC()}
	st.putServer(s)
	return cloneServer(s), nil
}

// actionNeedsFormat3 reports whether the server's action holds what
// snapshot format 2 cannot carry: only the commands of this file write
// it, and they are used only once every live peer knows them.
func actionNeedsFormat3(s *Server) bool {
	return s.Action != nil && (s.Action.RequestID != "" || s.Action.Intent != nil)
}
