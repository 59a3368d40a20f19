package fsm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The history of each server: its actions, as Nova's os-instance-actions
// lists them, each with the request that asked for it, the leader's time
// it started and changed, and its events (the owner's part of it, one
// per action but the rebuild of a stopped server, with its outcome and
// the host that took it).
//
// Apply keeps it from the changes of the server itself (putServer
// compares the server before and after every entry), so every command
// that creates, deletes, acts on, locks or moves a server leaves
// its trace, whichever command type it is and on every peer alike:
//
//   - create: when the server is recorded; its event finishes when the
//     build ends (ACTIVE: Success; ERROR: Error, with the fault as
//     traceback); a server no host could take has the conductor's event
//     instead, in Error, as in Nova;
//   - delete: when the delete is requested (or done, for a server never
//     scheduled); its event finishes when the server is DELETED;
//   - stop, start, reboot (soft and hard), rebuild, attach_interface,
//     detach_interface: when the action is requested; its event finishes
//     with the owner's outcome; a rebuild of a stopped server has a second
//     event, the stop that follows the redeploy (rebuild_stopped.go), and
//     both finish with the stop;
//   - resetState: when done (no event, as Nova records it); an action
//     the reset drops finishes in Error at once (its outcome will not be
//     taken, as in Nova, where the driver cannot save it), and so does
//     the create event of a build (the build goes on, its outcome shows
//     in the server, not in its history);
//   - lock, unlock: when done (no event, as in Nova; a rename is no
//     action in Nova, nor here);
//   - external events (external_events.go): each event another service
//     sent through os-server-external-events and the API accepted, as an
//     event of the server's latest action, never open, placed before
//     the owner's event while that one is open;
//   - failover: every change of owner (a dead or drained host's plan, an
//     operator's move), which Nova has no action for: an action of its
//     own, its message the reason ("host down: from peer3 at epoch 1"),
//     one event finished at once on the new owner. An action in progress
//     meanwhile keeps its own entry, finished later by the new owner.
//
// Kept only while FeatureInstanceActions is on, and for at most
// MaxServerActions per server (the oldest go first; Nova keeps them all,
// a replicated state must not grow without bound); removed with the
// server when it is purged.

// MaxServerActions bounds the actions kept per server.
const MaxServerActions = 32

// Instance action and event names, as Nova names them where it has them.
const (
	ActionCreate   = "create"
	ActionDelete   = "delete"
	ActionLock     = "lock"
	ActionUnlock   = "unlock"
	ActionFailover = "failover"
	// ActionResetState is Nova's instance action of os-resetState.
	ActionResetState = "resetState"

	EventResultSuccess = "Success"
	EventResultError   = "Error"
)

// InstanceAction is one action of a server.
type InstanceAction struct {
	Action    string `json:"action"`
	RequestID string `json:"request_id"`
	ProjectID string `json:"project_id"`
	UserID    string `json:"user_id"`
	// Message is Nova's: "Error" once an event failed; for a failover,
	// the reason of the change of owner.
	Message   string        `json:"message,omitempty"`
	StartTime time.Time     `json:"start_time"`
	UpdatedAt time.Time     `json:"updated_at"`
	Events    []ActionEvent `json:"events,omitempty"`
}

// ActionEvent is the owner's part of an action.
type ActionEvent struct {
	Event      string    `json:"event"`
	StartTime  time.Time `json:"start_time"`
	FinishTime time.Time `json:"finish_time,omitzero"` // zero: in progress
	Result     string    `json:"result,omitempty"`     // EventResultSuccess or EventResultError, once finished
	Traceback  string    `json:"traceback,omitempty"`  // the fault of a failed event
	Host       string    `json:"host,omitempty"`       // the owner that took it
}

// eventOf names the owner's event of each action, as Nova's compute
// manager names it.
var eventOf = map[string]string{
	ActionCreate: "compute__do_build_and_run_instance", ActionDelete: "compute_terminate_instance",
	ActionStop: "compute_stop_instance", ActionStart: "compute_start_instance",
	ActionReboot: "compute_reboot_instance", ActionRebuild: "compute_rebuild_instance", // and compute_stop_instance after a stopped server's rebuild
	ActionFailover:        "corral_reassign_owner",
	ActionAttachInterface: "compute_attach_interface", ActionDetachInterface: "compute_detach_interface",
}

// eventNoHost is the create's event of a server no host could take:
// Nova's conductor fails it before any compute host is involved.
const eventNoHost = "conductor_schedule_and_build_instances"

// actionName is the instance action of a server action's kind (Nova has
// one reboot action, soft or hard; the stop after a stopped server's
// rebuild is part of the rebuild).
func actionName(kind string) string {
	switch kind {
	case ActionRebootHard:
		return ActionReboot
	case ActionRebuildStop:
		return ActionRebuild
	}
	return kind
}

// historic is a, or nil for an action Nova keeps no instance action of
// (a change of security groups, server_secgroups.go).
func historic(a *ServerAction) *ServerAction {
	if a != nil && isSecurityGroupAction(a.Kind) {
		return nil
	}
	return a
}

// noteServer records in the history what the entry being applied
// (st.applying) changed of a server: old as it was (had: it existed), s
// as it is now.
func (st *state) noteServer(old Server, had bool, s Server) {
	if !st.featureOn(FeatureInstanceActions) {
		return
	}
	m := st.applying.Header()
	at := m.At.UTC()
	newAction := func(name string) InstanceAction {
		return InstanceAction{Action: name, RequestID: st.requestID(m), ProjectID: s.Project(), UserID: s.User(),
			StartTime: at, UpdatedAt: at}
	}
	started := func(name string) InstanceAction {
		a := newAction(name)
		a.Events = []ActionEvent{{Event: eventOf[name], StartTime: at, Host: s.Host}}
		return a
	}
	if !had {
		a := started(ActionCreate)
		if s.Status == StatusError && s.Host == "" {
			a.Events[0].Event = eventNoHost
		}
		if s.RequestID != "" {
			a.RequestID = s.RequestID
		}
		st.addAction(s.ID, a)
		st.finishBuild(old, s, at)
		return
	}
	if _, reset := st.applying.(*ResetServerState); reset {
		st.noteReset(old, s, newAction(ActionResetState), at)
		return
	}
	if old.Status == StatusBuild {
		st.finishBuild(old, s, at)
	}
	if old.Host != "" && s.Host != old.Host && s.Epoch > old.Epoch {
		a := started(ActionFailover)
		a.Message = s.OwnerReason
		a.Events[0].FinishTime, a.Events[0].Result = at, EventResultSuccess
		st.addAction(s.ID, a)
	}
	switch {
	case old.TaskState != TaskDeleting && s.TaskState == TaskDeleting:
		st.addAction(s.ID, started(ActionDelete))
	case old.Live() && !s.Live():
		if !st.finishAction(s.ID, ActionDelete, at, s.Host, EventResultSuccess, "") {
			st.addAction(s.ID, started(ActionDelete))
			st.finishAction(s.ID, ActionDelete, at, s.Host, EventResultSuccess, "")
		}
	}
	na, oa := historic(s.Action), historic(old.Action)
	requested := na != nil && (oa == nil || oa.Kind != na.Kind || !oa.RequestedAt.Equal(na.RequestedAt))
	switch {
	case requested && oa != nil && oa.Kind == ActionRebuild && na.Kind == ActionRebuildStop && oa.RequestedAt.Equal(na.RequestedAt):
		// The stop after the rebuild of a stopped server: an event of
		// the rebuild, as Nova's stop_instance runs within it.
		st.startEvent(s.ID, ActionRebuild, eventOf[ActionStop], at, s.Host)
	case requested:
		if oa != nil {
			st.finishAction(s.ID, actionName(oa.Kind), at, s.Host, EventResultError, "superseded by another action")
		}
		st.addAction(s.ID, started(actionName(na.Kind)))
	case oa != nil && na == nil:
		result, trace := EventResultSuccess, ""
		if s.Status == StatusError && s.Fault != nil && (old.Fault == nil || *old.Fault != *s.Fault) {
			result, trace = EventResultError, s.Fault.Message
		}
		st.finishAction(s.ID, actionName(oa.Kind), at, s.Host, result, trace)
	}
	if old.Locked != s.Locked {
		name := ActionUnlock
		if s.Locked {
			name = ActionLock
		}
		st.addAction(s.ID, newAction(name))
	}
}

// noteReset records an admin's reset of server s (old before it): the
// action a, and the end of the action it dropped.
func (st *state) noteReset(old, s Server, a InstanceAction, at time.Time) {
	const why = "the server's state was reset by an admin"
	if oa := historic(old.Action); oa != nil {
		st.finishAction(s.ID, actionName(oa.Kind), at, s.Host, EventResultError, why)
	}
	if old.Status == StatusBuild {
		st.finishAction(s.ID, ActionCreate, at, s.Host, EventResultError, why)
	}
	st.addAction(s.ID, a)
}

// finishBuild finishes the create event of a server whose build ended.
func (st *state) finishBuild(old, s Server, at time.Time) {
	switch s.Status {
	case StatusActive, StatusShutoff:
		st.finishAction(s.ID, ActionCreate, at, s.Host, EventResultSuccess, "")
	case StatusError, StatusDeleted:
		trace := "deleted while building"
		if s.Fault != nil {
			trace = s.Fault.Message
		}
		st.finishAction(s.ID, ActionCreate, at, s.Host, EventResultError, trace)
	}
}

// requestID is the entry's request id, or one derived from its log index
// for an entry the leader committed on its own (a failover plan).
func (st *state) requestID(m *Meta) string {
	if m.RequestID != "" {
		return m.RequestID
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "corral-entry-%d", st.index))
	return fmt.Sprintf("req-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// addAction appends a to the server's history, dropping the oldest past
// MaxServerActions. The history slice is never changed in place: a
// snapshot copy shares it.
func (st *state) addAction(id string, a InstanceAction) {
	old := st.actions[id]
	keep := old
	if len(keep) >= MaxServerActions {
		keep = keep[len(keep)-MaxServerActions+1:]
	}
	out := make([]InstanceAction, 0, len(keep)+1)
	st.actions[id] = append(append(out, keep...), a)
}

// startEvent starts event on the server's latest action named name (the
// action's updated_at moves to it, as in Nova).
func (st *state) startEvent(id, name, event string, at time.Time, host string) {
	acts := st.actions[id]
	for i := len(acts) - 1; i >= 0; i-- {
		a := acts[i]
		if a.Action != name {
			continue
		}
		a.Events = append(slices.Clone(a.Events), ActionEvent{Event: event, StartTime: at, Host: host})
		a.UpdatedAt = at
		acts = slices.Clone(acts)
		acts[i] = a
		st.actions[id] = acts
		return
	}
}

// finishAction finishes the open events of the server's latest action
// named name (the last one, and those started before it and still open:
// the rebuild of a stopped server, whose stop runs within it); it reports
// whether there was one.
func (st *state) finishAction(id, name string, at time.Time, host, result, trace string) bool {
	acts := st.actions[id]
	for i := len(acts) - 1; i >= 0; i-- {
		a := acts[i]
		if a.Action != name {
			continue
		}
		n := len(a.Events)
		if n == 0 || !a.Events[n-1].FinishTime.IsZero() {
			return false
		}
		a.Events = slices.Clone(a.Events)
		for j := n - 1; j >= 0 && a.Events[j].FinishTime.IsZero(); j-- {
			ev := &a.Events[j]
			ev.FinishTime, ev.Result, ev.Traceback = at, result, trace
			if host != "" {
				ev.Host = host
			}
		}
		if result == EventResultError {
			a.Message = EventResultError
		}
		a.UpdatedAt = at
		acts = slices.Clone(acts)
		acts[i] = a
		st.actions[id] = acts
		return true
	}
	return false
}

// InstanceActions returns the server's actions, oldest first (nil for a
// server without any, or unknown).
func (s *Store) InstanceActions(id string) []InstanceAction {
	s.mu.RLock()
	defer s.mu.RUnlock()
	acts := s.st.actions[id]
	out := make([]InstanceAction, len(acts))
	for i, a := range acts {
		a.Events = slices.Clone(a.Events)
		out[i] = a
	}
	return out
}

// actionsRecord is one RecordInstanceActions record.
type actionsRecord struct {
	ServerID string           `json:"server_id"`
	Actions  []InstanceAction `json:"actions"`
}

func writeActionsRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.actions) {
		if err := emit(actionsRecord{ServerID: id, Actions: st.actions[id]}); err != nil {
			return err
		}
	}
	return nil
}

func loadActionsRecord(st *state, body []byte) error {
	var r actionsRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	switch _, dup := st.actions[r.ServerID]; {
	case r.ServerID == "" || len(r.Actions) == 0:
		return fmt.Errorf("instance actions record without a server or actions")
	case dup:
		return fmt.Errorf("instance actions of server %s appear twice", r.ServerID)
	case len(r.Actions) > MaxServerActions:
		return fmt.Errorf("server %s has %d instance actions, more than %d", r.ServerID, len(r.Actions), MaxServerActions)
	}
	st.actions[r.ServerID] = r.Actions
	return nil
}

func init() {
	registerRecord(RecordInstanceActions, recordSpec{name: "instance actions", write: writeActionsRecords, load: loadActionsRecord})
}
