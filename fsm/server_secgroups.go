package fsm

import (
	"fmt"
	"slices"
	"time"
)

// The security groups of a server's Neutron ports (with [neutron]), as
// Nova keeps them in Neutron: a boot's groups (CreateServer.SecurityGroups,
// resolved by the API) are given to the ports the owner creates, and
// Nova's addSecurityGroup and removeSecurityGroup change the groups of
// every port of the server. The API resolves the group and commits the
// request (RequestSecurityGroupAction); the owner updates each port after
// its port intent at its epoch (SetPortIntent, step security_groups) and
// commits the outcome with the ports' groups as Neutron then has them
// (FinishSecurityGroupAction). Each port record keeps its groups' ids and
// names (ServerPort.SecurityGroups), so a server view lists them without
// asking Neutron.
//
// Nova's API changes a server's groups within the request; here the API
// answers once the owner is done, and the server shows a task state of
// corral's own meanwhile. Nova records no instance action for it, and
// neither does corral. Both commands, and the groups in CreateServer and
// RecordServerPort, are used only once every live peer knows 64 and 65.

// Security group actions and their task state.
const (
	ActionAddSecurityGroup     = "add_security_group"
	ActionRemoveSecurityGroup  = "remove_security_group"
	TaskUpdatingSecurityGroups = "updating_security_groups"
	// PortStepSecurityGroups is the port intent of a change of a port's
	// security groups.
	PortStepSecurityGroups = "security_groups"
)

// MaxSecurityGroups bounds the security groups of a boot and of a port.
const MaxSecurityGroups = 32

// requestGroups keeps the security groups a new server's boot asked for.
func (st *state) requestGroups(id string, groups []SecurityGroupRef) {
	if len(groups) == 0 {
		return
	}
	n := st.nets[id].clone()
	n.Requested = slices.Clone(groups)
	st.nets[id] = n
}

func isSecurityGroupAction(kind string) bool {
	return kind == ActionAddSecurityGroup || kind == ActionRemoveSecurityGroup
}

// SecurityGroupRef is a Neutron security group: its id and its name (as
// Neutron had it when recorded; "" for a group without one).
type SecurityGroupRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// checkSecurityGroups holds a list of groups to its bounds: ids given,
// each at most once, every field at most 255 characters.
func checkSecurityGroups(what string, groups []SecurityGroupRef) error {
	if len(groups) > MaxSecurityGroups {
		return fmt.Errorf("%w: %s has %d security groups, more than %d", ErrInvalid, what, len(groups), MaxSecurityGroups)
	}
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		switch {
		case g.ID == "" || len(g.ID) > maxPortFieldLen || len(g.Name) > maxPortFieldLen:
			return fmt.Errorf("%w: a security group of %s has an id of %d characters and a name of %d: 1 to %d and at most %d",
				ErrInvalid, what, len(g.ID), len(g.Name), maxPortFieldLen, maxPortFieldLen)
		case seen[g.ID]:
			return fmt.Errorf("%w: security group %s appears twice in %s", ErrInvalid, g.ID, what)
		}
		seen[g.ID] = true
	}
	return nil
}

// SecurityGroupRequest is a server's last security group request and,
// once the owner finished it, its outcome: Code and Fault are Nova's
// answer when it failed (404 the group on none of the ports, 400 a port
// it cannot be applied to, 409 Neutron's conflict).
type SecurityGroupRequest struct {
	Kind        string           `json:"kind"`
	Group       SecurityGroupRef `json:"group"`
	RequestID   string           `json:"request_id,omitempty"`
	RequestedAt time.Time        `json:"requested_at"`
	Done        bool             `json:"done,omitempty"`
	Code        int              `json:"code,omitempty"`
	Fault       string           `json:"fault,omitempty"`
}

// RequestSecurityGroupAction commits a user's request to add the security
// group Group to every port of a server, or to remove it from them. The
// server must have ports and no task in progress.
type RequestSecurityGroupAction struct {
	Meta
	ID    string           `json:"id"`
	Kind  string           `json:"kind"`
	Group SecurityGroupRef `json:"group"`
}

// Type implements Command.
func (*RequestSecurityGroupAction) Type() CommandType { return CmdRequestSecurityGroupAction }

// PortSecurityGroups are the security groups of one of a server's ports.
type PortSecurityGroups struct {
	PortID string             `json:"port_id"`
	Groups []SecurityGroupRef `json:"groups"`
}

// FinishSecurityGroupAction is the owner's outcome of the server's
// security group request in progress (named by Kind and RequestedAt):
// Ports are the groups Neutron has on each of the server's recorded ports
// now; Code and Fault say why it failed, when it did. Either way the task
// ends.
type FinishSecurityGroupAction struct {
	Meta
	ID          string               `json:"id"`
	Host        string               `json:"host"`
	Epoch       uint64               `json:"epoch"`
	Kind        string               `json:"kind"`
	RequestedAt time.Time            `json:"requested_at"`
	Ports       []PortSecurityGroups `json:"ports,omitempty"`
	Code        int                  `json:"code,omitempty"`
	Fault       string               `json:"fault,omitempty"`
}

// Type implements Command.
func (*FinishSecurityGroupAction) Type() CommandType { return CmdFinishSecurityGroupAction }

func init() {
	register[RequestSecurityGroupAction](CmdRequestSecurityGroupAction, "RequestSecurityGroupAction", applyRequestSecurityGroupAction)
	register[FinishSecurityGroupAction](CmdFinishSecurityGroupAction, "FinishSecurityGroupAction", applyFinishSecurityGroupAction)
}

func applyRequestSecurityGroupAction(st *state, c *RequestSecurityGroupAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	if len(c.RequestID) > maxRequestIDLen {
		return nil, fmt.Errorf("%w: request id is %d characters, more than %d", ErrInvalid, len(c.RequestID), maxRequestIDLen)
	}
	if !isSecurityGroupAction(c.Kind) {
		return nil, fmt.Errorf("%w: security group action %q is unknown", ErrInvalid, c.Kind)
	}
	if err := checkSecurityGroups("the request", []SecurityGroupRef{c.Group}); err != nil {
		return nil, err
	}
	n := st.nets[c.ID]
	switch {
	case len(n.Ports) == 0:
		return nil, fmt.Errorf("%w: instance_id %s could not be found as device id on any ports", ErrNotFound, c.ID)
	case s.TaskState != "":
		return nil, fmt.Errorf("%w: Cannot '%s' instance %s while it is in task_state %s", ErrConflict, c.Kind, c.ID, s.TaskState)
	case s.Host == "":
		return nil, fmt.Errorf("%w: Cannot '%s' instance %s while it is in vm_state %s", ErrConflict, c.Kind, c.ID, vmStateOf(s.Status))
	}
	at := c.At.UTC()
	n = n.clone()
	n.SecurityGroup = &SecurityGroupRequest{Kind: c.Kind, Group: c.Group, RequestID: c.RequestID, RequestedAt: at}
	st.nets[c.ID] = n
	s = cloneServer(s)
	s.TaskState = TaskUpdatingSecurityGroups
	s.Action = &ServerAction{Kind: c.Kind, RequestedAt: at, RequestID: c.RequestID}
	s.UpdatedAt = at
	st.putServer(s)
	return cloneServer(s), nil
}

func applyFinishSecurityGroupAction(st *state, c *FinishSecurityGroupAction) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok {
		return nil, errServerNotFound(c.ID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	switch {
	case !isSecurityGroupAction(c.Kind) || s.Action == nil || s.Action.Kind != c.Kind || s.TaskState != TaskUpdatingSecurityGroups:
		return nil, fmt.Errorf("%w: server %s has no %s in progress (task %q)", ErrConflict, c.ID, c.Kind, s.TaskState)
	case !c.RequestedAt.Equal(s.Action.RequestedAt):
		return nil, fmt.Errorf("%w: server %s has another %s in progress (requested at %s)", ErrConflict, c.ID, c.Kind, s.Action.RequestedAt.Format(time.RFC3339Nano))
	case len(c.Fault) > maxFaultLen:
		return nil, fmt.Errorf("%w: a fault is %d characters, more than %d", ErrInvalid, len(c.Fault), maxFaultLen)
	case (c.Fault == "") != (c.Code == 0) || c.Code != 0 && (c.Code < 400 || c.Code > 599):
		return nil, fmt.Errorf("%w: a failed security group action has a fault and a code from 400 to 599 (code %d)", ErrInvalid, c.Code)
	}
	n := st.nets[c.ID].clone()
	seen := map[string]bool{}
	for _, pg := range c.Ports {
		i := slices.IndexFunc(n.Ports, func(p ServerPort) bool { return p.ID == pg.PortID })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: port %q is not one of server %s's", ErrInvalid, pg.PortID, c.ID)
		case seen[pg.PortID]:
			return nil, fmt.Errorf("%w: port %s appears twice", ErrInvalid, pg.PortID)
		}
		seen[pg.PortID] = true
		if err := checkSecurityGroups("port "+pg.PortID, pg.Groups); err != nil {
			return nil, err
		}
		n.Ports[i].SecurityGroups, n.Ports[i].GroupsKnown = slices.Clone(pg.Groups), true
	}
	if r := n.SecurityGroup; r != nil && r.Kind == c.Kind && r.RequestedAt.Equal(c.RequestedAt) {
		r.Done, r.Code, r.Fault = true, c.Code, c.Fault
	}
	st.nets[c.ID] = n
	s = cloneServer(s)
	s.TaskState, s.Action, s.UpdatedAt = "", nil, c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}
