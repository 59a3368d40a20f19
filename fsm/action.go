package fsm

import (
	"fmt"
	"time"
)

// Server actions (stop, start, reboot, rebuild) follow the pattern of
// deploys: the request commits the action (a task state and the action),
// the owner host commits the intent of each side effect at its epoch
// (StartServerAction, action_intent.go) before it takes it, and commits
// the outcome at that epoch. A new owner after a failover finds the
// action and the last intent in the log, and tells from the backend's
// state whether that side effect was taken, so it never takes it twice.
// Renames and locks change only the log.

// StatusShutoff is Nova's status of a stopped server.
const StatusShutoff ServerStatus = "SHUTOFF"

// Task states of server actions, as Nova names them.
const (
	TaskPoweringOff   = "powering-off"
	TaskPoweringOn    = "powering-on"
	TaskRebooting     = "rebooting"
	TaskRebootingHard = "rebooting_hard"
	TaskRebuilding    = "rebuilding"
)

// Server actions.
const (
	ActionStop       = "stop"
	ActionStart      = "start"
	ActionReboot     = "reboot"      // soft: the OS is asked to restart
	ActionRebootHard = "reboot_hard" // power cycle
	ActionRebuild    = "rebuild"     // redeploy with ImageRef
	// ActionRebuildStop is the power-off that ends the rebuild of a
	// stopped server (rebuild_stopped.go); no user asks for it.
	ActionRebuildStop = "rebuild_stop"
)

// actionTask maps each action to its task state.
var actionTask = map[string]string{
	ActionStop: TaskPoweringOff, ActionStart: TaskPoweringOn, ActionReboot: TaskRebooting,
	ActionRebootHard: TaskRebootingHard, ActionRebuild: TaskRebuilding, ActionRebuildStop: TaskPoweringOff,
}

// IsActionTask reports whether task is the task state of a server action
// (an interface action's among them, server_interfaces.go).
func IsActionTask(task string) bool {
	switch task {
	case TaskPoweringOff, TaskPoweringOn, TaskRebooting, TaskRebootingHard, TaskRebuilding,
		TaskAttachingInterface, TaskDetachingInterface, TaskUpdatingSecurityGroups:
		return true
	}
	return false
}

// ServerAction is the action a server's owner has to carry out. Kind and
// RequestedAt (stamped by the leader) identify it among the server's
// actions.
type ServerAction struct {
	Kind        string    `json:"kind"`
	ImageRef    string    `json:"image_ref,omitempty"` // rebuild: the new image
	RequestedAt time.Time `json:"requested_at"`
	// RequestID is the request that asked for the action (its OpenStack
	// request id), which the owner sends to the backend with every side
	// effect of the action; empty for an action requested through
	// RequestServerAction.
	RequestID string `json:"request_id,omitempty"`
	// Intent is the side effect the owner last said it was about to take.
	Intent *ActionIntent `json:"intent,omitempty"`
	// PreserveEphemeral asks a rebuild to keep the node's ephemeral
	// partition (Ironic's instance_info/preserve_ephemeral; RebuildServer
	// sets it, snapshot format 4 carries it).
	PreserveEphemeral bool `json:"preserve_ephemeral,omitempty"`
}

// RequestServerAction commits a user's action on a server.
type RequestServerAction struct {
	Meta
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	ImageRef string `json:"image_ref,omitempty"`
	// Admin lets the request act on a locked server, as Nova lets admins.
	Admin bool `json:"admin,omitempty"`
}

// Type implements Command.
func (*RequestServerAction) Type() CommandType { return CmdRequestServerAction }

// FinishServerAction is the owner's outcome of the action in progress:
// done (no Fault), or failed with Fault (the server goes to ERROR).
type FinishServerAction struct {
	Meta
	ID    string `json:"id"`
	Host  string `json:"host"`
	Epoch uint64 `json:"epoch"`
	Kind  string `json:"kind"`
	Fault *Fault `json:"fault,omitempty"`
	// RequestedAt, when set, names the action finished: an outcome of an
	// earlier action of the same kind is refused.
	RequestedAt time.Time `json:"requested_at,omitzero"`
}

// Type implements Command.
func (*FinishServerAction) Type() CommandType { return CmdFinishServerAction }

// UpdateServer renames a server or locks or unlocks it. Nil fields stay.
type UpdateServer struct {
	Meta
	ID           string  `json:"id"`
	Name         *string `json:"name,omitempty"`
	Locked       *bool   `json:"locked,omitempty"`
	LockedReason string  `json:"locked_reason,omitempty"`
}

// Type implements Command.
func (*UpdateServer) Type() CommandType { return CmdUpdateServer }

func init() {
	register[RequestServerAction](CmdRequestServerAction, "RequestServerAction", applyRequestServerAction)
	register[FinishServerAction](CmdFinishServerAction, "FinishServerAction", applyFinishServerAction)
	register[UpdateServer](CmdUpdateServer, "UpdateServer", applyUpdateServer)
}

// actionAllowed reports whether a server in status may take the action,
// as Nova's vm_state checks.
func actionAllowed(kind string, status ServerStatus) bool {
	switch kind {
	case ActionStop:
		return status == StatusActive || status == StatusError
	case ActionStart:
		return status == StatusShutoff
	case ActionReboot:
		return status == StatusActive
	case ActionRebootHard, ActionRebuild:
		return status == StatusActive || status == StatusShutoff || status == StatusError
	}
	return false
}

func applyRequestServerAction(st *state, c *RequestServerAction) (any, error) {
	return requestAction(st, c, "")
}

// requestAction commits the action c asks for, keeping requestID with it.
func requestAction(st *state, c *RequestServerAction, requestID string) (any, error) {
	s, err := startAction(st, c, requestID)
	if err != nil {
		return nil, err
	}
	st.putServer(s)
	return cloneServer(s), nil
}

// startAction checks the action c asks for and returns a copy of the
// server with it in progress, changing nothing.
func startAction(st *state, c *RequestServerAction, requestID string) (Server, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return Server{}, errServerNotFound(c.ID)
	}
	if c.Bounded {
		if err := CheckText("imageRef", c.ImageRef, MaxImageRefLen, false); err != nil {
			return Server{}, err
		}
	}
	task, known := actionTask[c.Kind]
	switch {
	case !known || c.Kind == ActionRebuildStop:
		return Server{}, fmt.Errorf("%w: server action %q is unknown", ErrInvalid, c.Kind)
	case c.Kind == ActionRebuild && c.ImageRef == "":
		return Server{}, fmt.Errorf("%w: a rebuild needs an image", ErrInvalid)
	case c.Kind != ActionRebuild && c.ImageRef != "":
		return Server{}, fmt.Errorf("%w: only a rebuild takes an image", ErrInvalid)
	case s.Locked && !c.Admin:
		return Server{}, fmt.Errorf("%w: Instance %s is locked", ErrConflict, c.ID)
	case s.TaskState != "":
		return Server{}, fmt.Errorf("%w: Cannot '%s' instance %s while it is in task_state %s", ErrConflict, c.Kind, c.ID, s.TaskState)
	case !actionAllowed(c.Kind, s.Status) || s.Host == "" || s.NodeUUID == "" && st.hosts[s.Host].Kind != KindHypervisor:
		return Server{}, fmt.Errorf("%w: Cannot '%s' instance %s while it is in vm_state %s", ErrConflict, c.Kind, c.ID, vmStateOf(s.Status))
	}
	s = cloneServer(s)
	s.TaskState = task
	s.Action = &ServerAction{Kind: c.Kind, ImageRef: c.ImageRef, RequestedAt: c.At.UTC(), RequestID: requestID}
	s.UpdatedAt = c.At.UTC()
	return s, nil
}

// Image is the image the server runs or is being rebuilt with: Nova's
// image_ref, which its API sets when it accepts a rebuild. ImageRef
// changes when the rebuild is done (or dropped by ResetServerState); a
// failed rebuild keeps the image the server had, as entries applied by
// every version always did.
func (s Server) Image() string {
	if s.Action != nil && s.Action.Kind == ActionRebuild {
		return s.Action.ImageRef
	}
	return s.ImageRef
}

func vmStateOf(status ServerStatus) string {
	switch status {
	case StatusActive:
		return "active"
	case StatusShutoff:
		return "stopped"
	case StatusError:
		return "error"
	case StatusBuild:
		return "building"
	}
	return "deleted"
}

func applyFinishServerAction(st *state, c *FinishServerAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if s.Action == nil || s.Action.Kind != c.Kind || s.TaskState != actionTask[c.Kind] || isInterfaceAction(c.Kind) {
		return nil, fmt.Errorf("%w: server %s has no %s in progress (task %q)", ErrConflict, c.ID, c.Kind, s.TaskState)
	}
	if !c.RequestedAt.IsZero() && !c.RequestedAt.Equal(s.Action.RequestedAt) {
		return nil, fmt.Errorf("%w: server %s has another %s in progress (requested at %s)", ErrConflict, c.ID, c.Kind, s.Action.RequestedAt.Format(time.RFC3339Nano))
	}
	at := c.At.UTC()
	s = cloneServer(s)
	switch {
	case c.Fault != nil:
		f := *c.Fault
		f.Created = at
		s.Fault, s.Status = &f, StatusError
	case c.Kind == ActionStop, c.Kind == ActionRebuildStop:
		s.Status = StatusShutoff
	default:
		s.Status, s.Fault = StatusActive, nil
	}
	if c.Fault == nil && c.Kind == ActionRebuild {
		s.ImageRef = s.Action.ImageRef
	}
	s.TaskState, s.Action, s.UpdatedAt = "", nil, at
	clearAdminPass(&s) // the rebuild was sent
	st.putServer(s)
	return cloneServer(s), nil
}

func applyUpdateServer(st *state, c *UpdateServer) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	if c.Name != nil {
		if err := checkServerText(*c.Name, "", nil, nil, c.Bounded); err != nil {
			return nil, err
		}
		if c.Bounded {
			if err := CheckName("server name", *c.Name); err != nil {
				return nil, err
			}
		}
	}
	if !c.Bounded && len(c.LockedReason) > maxServerNameLen {
		return nil, fmt.Errorf("%w: locked_reason must be at most %d characters", ErrInvalid, maxServerNameLen)
	}
	if c.Bounded {
		if err := checkReason("locked_reason", c.LockedReason); err != nil {
			return nil, err
		}
	}
	s = cloneServer(s)
	if c.Name != nil {
		s.Name = *c.Name
	}
	if c.Locked != nil {
		s.Locked, s.LockedReason = *c.Locked, ""
		if *c.Locked {
			s.LockedReason = c.LockedReason
		}
	}
	s.UpdatedAt = c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}
