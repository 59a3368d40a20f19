package history

import (
	"github.com/corral-dev/corral/jepsen/client"
)

// Op types, as in Jepsen: an invocation and then exactly one completion.
const (
	Invoke = "invoke"
	OK     = "ok"   // the operation took effect (or the read returned this value)
	Fail   = "fail" // the operation certainly did not take effect
	Info   = "info" // unknown outcome: it may or may not have taken effect
)

// Operation functions.
const (
	FBoot   = "boot"
	FDelete = "delete"
	FRead   = "read"   // GET /servers/{id}
	FList   = "list"   // GET /servers/detail
	FAction = "action" // POST /servers/{id}/action (-workload actions)
)

// Consistency levels passed in ?consistency=.
const (
	Linearizable = "linearizable"
	Default      = "default"
)

// OpValue is the value of an operation: the server it is about and, for
// completed reads, what was seen.
type OpValue struct {
	Name     string        `json:"name,omitempty"`
	ID       string        `json:"id,omitempty"`
	NotFound bool          `json:"not_found,omitempty"` // a read or delete answered 404
	Server   *ServerState  `json:"server,omitempty"`    // a read's result
	Servers  []ServerState `json:"servers,omitempty"`   // a list's result
	Action   *ActionInfo   `json:"action,omitempty"`    // a server action: which, and its request id
	Nets     []NetRequest  `json:"networks,omitempty"`  // a boot's networks (-neutron)
}

// Op is one line of history.jsonl.
type Op struct {
	Index       int     `json:"index"`
	Process     int     `json:"process"`
	Type        string  `json:"type"`
	F           string  `json:"f"`
	Node        string  `json:"node,omitempty"` // the peer the request was sent to
	Consistency string  `json:"consistency,omitempty"`
	Time        int64   `json:"time"` // nanoseconds since the start of the run
	Value       OpValue `json:"value"`
	Code        int     `json:"code,omitempty"` // HTTP status of the completion
	Error       string  `json:"error,omitempty"`
	Injected    bool    `json:"injected,omitempty"` // added by -inject-*, not observed
}

// ServerState is what a read saw of one server.
type ServerState struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"`
	Task   string `json:"task,omitempty"`
	Host   string `json:"host,omitempty"`
	Node   string `json:"node,omitempty"`
	Fault  string `json:"fault,omitempty"` // an ERROR server's fault message
}

// Deleting reports whether a delete was requested and not yet finished.
func (s ServerState) Deleting() bool { return s.Task == "deleting" }

// Acting reports whether a server action (stop, start, reboot, rebuild)
// was accepted and not yet finished.
func (s ServerState) Acting() bool {
	switch s.Task {
	case "powering-off", "powering-on", "rebooting", "rebooting_hard", "rebuilding":
		return true
	}
	switch s.Status {
	case "REBOOT", "HARD_REBOOT", "REBUILD":
		return true
	}
	return false
}

// StateOf is what a read saw of a server in corral's view of it. corral
// shows an empty task state, host or node as null, which reads as "".
func StateOf(s client.Server) ServerState {
	st := ServerState{ID: s.ID, Name: s.Name, Status: s.Status, Task: s.TaskState, Host: s.Host, Node: s.Node}
	if s.Fault != nil {
		st.Fault = s.Fault.Message
	}
	return st
}

// StatesOf is StateOf of each server (an empty list, not nil, for none).
func StatesOf(ss []client.Server) []ServerState {
	out := make([]ServerState, 0, len(ss))
	for _, s := range ss {
		out = append(out, StateOf(s))
	}
	return out
}

// Server actions as the suite names them.
const (
	ActStop       = "stop"
	ActStart      = "start"
	ActRebootSoft = "reboot-soft"
	ActRebootHard = "reboot-hard"
	ActRebuild    = "rebuild"
)

// ActionInfo is what the history keeps of a server action.
type ActionInfo struct {
	Kind      string `json:"kind"`                        // stop, start, reboot-soft, reboot-hard, rebuild
	RequestID string `json:"request_id"`                  // the X-OpenStack-Request-Id sent
	Echoed    string `json:"echoed_request_id,omitempty"` // the one corral answered with (completions)
	Node      string `json:"node,omitempty"`              // the server's Ironic node, from the show before
	Host      string `json:"host,omitempty"`              // its owner then
	Status    string `json:"status_before,omitempty"`     // ACTIVE or SHUTOFF
}
