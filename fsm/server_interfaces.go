package fsm

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// The network interfaces a user attaches to or detaches from a running
// server (Nova's os-interface), with [neutron]. The API commits the
// request (RequestInterfaceAction): the server's action, attach_interface
// or detach_interface, as Nova records it in the server's history, with a
// task state of corral's own while the owner carries it out (Nova's call
// holds the request instead), and what to attach or detach in the
// server's port record (ServerNet.Interface). The owner takes each
// Neutron and Ironic side effect after its port intent at its epoch
// (SetPortIntent), as for a boot's ports, and commits the outcome
// (FinishInterfaceAction): the port attached, or why not. A failed attach
// or detach leaves the server as it was (Nova answers the caller, the
// server does not go to ERROR).
//
// Both commands are used only once every live peer knows them, and only
// they write ServerNet.Interface (snapshot record RecordServerPorts).

// Interface actions and their task states.
const (
	ActionAttachInterface  = "attach_interface"
	ActionDetachInterface  = "detach_interface"
	TaskAttachingInterface = "interface_attaching"
	TaskDetachingInterface = "interface_detaching"
)

func isInterfaceAction(kind string) bool {
	return kind == ActionAttachInterface || kind == ActionDetachInterface
}

// InterfaceRequest is a server's last os-interface request: what to
// attach (a network, with a fixed address or not, or the user's port) or
// detach (a port), and once the owner finished it, its outcome.
type InterfaceRequest struct {
	Kind        string    `json:"kind"`
	NetworkID   string    `json:"network_id,omitempty"`
	PortID      string    `json:"port_id,omitempty"` // attach: the port attached once done
	FixedIP     string    `json:"fixed_ip,omitempty"`
	RequestID   string    `json:"request_id,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	// Had are the server's ports when it was requested: a port recorded
	// since is the attach's own.
	Had   []string `json:"had,omitempty"`
	Done  bool     `json:"done,omitempty"`
	Fault string   `json:"fault,omitempty"` // why it failed, once done
}

// RequestInterfaceAction commits a user's request to attach a network
// interface to a server (Kind ActionAttachInterface: NetworkID, with
// FixedIP or not, or PortID) or to detach one (ActionDetachInterface:
// PortID, one of the server's ports). Refused as Nova refuses it: the
// server locked (unless Admin), not ACTIVE or SHUTOFF, or in a task.
type RequestInterfaceAction struct {
	Meta
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	NetworkID string `json:"network_id,omitempty"`
	PortID    string `json:"port_id,omitempty"`
	FixedIP   string `json:"fixed_ip,omitempty"`
	Admin     bool   `json:"admin,omitempty"`
}

// Type implements Command.
func (*RequestInterfaceAction) Type() CommandType { return CmdRequestInterfaceAction }

// FinishInterfaceAction is the owner's outcome of the server's interface
// action in progress (named by Kind and RequestedAt): done, with PortID
// the port attached, or failed with Fault. Either way the server keeps
// its status; the action's event in its history says which.
type FinishInterfaceAction struct {
	Meta
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Epoch       uint64    `json:"epoch"`
	Kind        string    `json:"kind"`
	RequestedAt time.Time `json:"requested_at"`
	PortID      string    `json:"port_id,omitempty"`
	Fault       string    `json:"fault,omitempty"`
}

// Type implements Command.
func (*FinishInterfaceAction) Type() CommandType { return CmdFinishInterfaceAction }

func init() {
	register[RequestInterfaceAction](CmdRequestInterfaceAction, "RequestInterfaceAction", applyRequestInterfaceAction)
	register[FinishInterfaceAction](CmdFinishInterfaceAction, "FinishInterfaceAction", applyFinishInterfaceAction)
}

const maxFaultLen = 1024

func applyRequestInterfaceAction(st *state, c *RequestInterfaceAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	if len(c.RequestID) > maxRequestIDLen {
		return nil, fmt.Errorf("%w: request id is %d characters, more than %d", ErrInvalid, len(c.RequestID), maxRequestIDLen)
	}
	for _, f := range []struct{ name, v string }{{"network", c.NetworkID}, {"port", c.PortID}, {"fixed IP", c.FixedIP}} {
		if err := checkPortField(f.name, f.v, false); err != nil {
			return nil, err
		}
	}
	n := st.nets[c.ID]
	switch c.Kind {
	case ActionAttachInterface:
		switch {
		case (c.NetworkID == "") == (c.PortID == ""):
			return nil, fmt.Errorf("%w: an interface attach names a network or a port", ErrInvalid)
		case c.FixedIP != "" && c.NetworkID == "":
			return nil, fmt.Errorf("%w: Must input network_id when request IP address", ErrInvalid)
		case c.PortID != "" && slices.ContainsFunc(n.Ports, func(p ServerPort) bool { return p.ID == c.PortID }):
			return nil, fmt.Errorf("%w: Port %s is still in use.", ErrConflict, c.PortID)
		case len(n.Ports) >= MaxServerPorts:
			return nil, fmt.Errorf("%w: server %s already has %d ports", ErrConflict, c.ID, MaxServerPorts)
		}
		if c.FixedIP != "" {
			if _, err := netip.ParseAddr(c.FixedIP); err != nil {
				return nil, fmt.Errorf("%w: fixed IP %q is not an address", ErrInvalid, c.FixedIP)
			}
		}
	case ActionDetachInterface:
		switch {
		case c.PortID == "" || c.NetworkID != "" || c.FixedIP != "":
			return nil, fmt.Errorf("%w: an interface detach names a port, and only that", ErrInvalid)
		case !slices.ContainsFunc(n.Ports, func(p ServerPort) bool { return p.ID == c.PortID }):
			return nil, fmt.Errorf("%w: Port %s is not attached", ErrNotFound, c.PortID)
		}
	default:
		return nil, fmt.Errorf("%w: interface action %q is unknown", ErrInvalid, c.Kind)
	}
	switch {
	case s.Locked && !c.Admin:
		return nil, fmt.Errorf("%w: Instance %s is locked", ErrConflict, c.ID)
	case s.TaskState != "":
		return nil, fmt.Errorf("%w: Cannot '%s' instance %s while it is in task_state %s", ErrConflict, c.Kind, c.ID, s.TaskState)
	case s.Status != StatusActive && s.Status != StatusShutoff || s.Host == "" || s.NodeUUID == "" && st.hosts[s.Host].Kind != KindHypervisor:
		return nil, fmt.Errorf("%w: Cannot '%s' instance %s while it is in vm_state %s", ErrConflict, c.Kind, c.ID, vmStateOf(s.Status))
	}
	at := c.At.UTC()
	n = n.clone()
	n.Interface = &InterfaceRequest{Kind: c.Kind, NetworkID: c.NetworkID, PortID: c.PortID, FixedIP: c.FixedIP,
		RequestID: c.RequestID, RequestedAt: at}
	for _, p := range n.Ports {
		n.Interface.Had = append(n.Interface.Had, p.ID)
	}
	st.nets[c.ID] = n
	s = cloneServer(s)
	s.TaskState = interfaceTask(c.Kind)
	s.Action = &ServerAction{Kind: c.Kind, RequestedAt: at, RequestID: c.RequestID}
	s.UpdatedAt = at
	st.putServer(s)
	return cloneServer(s), nil
}

func interfaceTask(kind string) string {
	if kind == ActionAttachInterface {
		return TaskAttachingInterface
	}
	return TaskDetachingInterface
}

func applyFinishInterfaceAction(st *state, c *FinishInterfaceAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	switch {
	case !isInterfaceAction(c.Kind) || s.Action == nil || s.Action.Kind != c.Kind || s.TaskState != interfaceTask(c.Kind):
		return nil, fmt.Errorf("%w: server %s has no %s in progress (task %q)", ErrConflict, c.ID, c.Kind, s.TaskState)
	case !c.RequestedAt.Equal(s.Action.RequestedAt):
		return nil, fmt.Errorf("%w: server %s has another %s in progress (requested at %s)", ErrConflict, c.ID, c.Kind, s.Action.RequestedAt.Format(time.RFC3339Nano))
	case len(c.Fault) > maxFaultLen:
		return nil, fmt.Errorf("%w: a fault is %d characters, more than %d", ErrInvalid, len(c.Fault), maxFaultLen)
	}
	if err := checkPortField("port", c.PortID, false); err != nil {
		return nil, err
	}
	at := c.At.UTC()
	n := st.nets[c.ID].clone()
	if in := n.Interface; in != nil && in.Kind == c.Kind && in.RequestedAt.Equal(c.RequestedAt) {
		in.Done, in.Fault = true, c.Fault
		if c.PortID != "" {
			in.PortID = c.PortID
		}
	}
	st.nets[c.ID] = n
	if c.Fault != "" {
		st.finishAction(c.ID, c.Kind, at, c.Host, EventResultError, c.Fault)
	}
	s = cloneServer(s)
	s.TaskState, s.Action, s.UpdatedAt = "", nil, at
	st.putServer(s)
	return cloneServer(s), nil
}
