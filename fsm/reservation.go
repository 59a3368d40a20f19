package fsm

import "fmt"

// ReserveNode records that the owner reserved an Ironic node for a
// server. Apply keeps at most one server per node and one node per server.
type ReserveNode struct {
	Meta
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	Epoch          uint64 `json:"epoch"`
	NodeUUID       string `json:"node_uuid"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

// Type implements Command.
func (*ReserveNode) Type() CommandType { return CmdReserveNode }

// ReleaseNode records that the owner released the server's node.
type ReleaseNode struct {
	Meta
	ServerID string `json:"server_id"`
	Host     string `json:"host"`
	Epoch    uint64 `json:"epoch"`
	NodeUUID string `json:"node_uuid"`
}

// Type implements Command.
func (*ReleaseNode) Type() CommandType { return CmdReleaseNode }

// Reservation is one node held by one server.
type Reservation struct {
	NodeUUID       string `json:"node_uuid"`
	ServerID       string `json:"server_id"`
	Host           string `json:"host"`
	AllocationUUID string `json:"allocation_uuid,omitempty"`
}

func init() {
	register[ReserveNode](CmdReserveNode, "ReserveNode", applyReserveNode)
	register[ReleaseNode](CmdReleaseNode, "ReleaseNode", applyReleaseNode)
}

func applyReserveNode(st *state, c *ReserveNode) (any, error) {
	s, ok := st.servers[c.ServerID]
	if !ok {
		return nil, errServerNotFound(c.ServerID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if c.NodeUUID == "" {
		return nil, fmt.Errorf("%w: reservation without a node", ErrInvalid)
	}
	if s.Status == StatusDeleted {
		return nil, fmt.Errorf("%w: server %s is deleted", ErrConflict, s.ID)
	}
	if other, taken := st.reservations[c.NodeUUID]; taken && other != s.ID {
		return nil, fmt.Errorf("%w: node %s is already reserved for server %s", ErrConflict, c.NodeUUID, other)
	}
	if s.NodeUUID != "" && s.NodeUUID != c.NodeUUID {
		return nil, fmt.Errorf("%w: server %s already holds node %s", ErrConflict, s.ID, s.NodeUUID)
	}
	s.NodeUUID, s.AllocationUUID = c.NodeUUID, c.AllocationUUID
	s.UpdatedAt = c.At.UTC()
	st.putServer(s)
	st.reservations[c.NodeUUID] = s.ID
	return cloneServer(s), nil
}

func applyReleaseNode(st *state, c *ReleaseNode) (any, error) {
	s, ok := st.servers[c.ServerID]
	if !ok {
		return nil, errServerNotFound(c.ServerID)
	}
	if err := fence(s, c.Host, c.Epoch); err != nil {
		return nil, err
	}
	if s.NodeUUID == "" || s.NodeUUID != c.NodeUUID {
		return cloneServer(s), nil // already released: idempotent
	}
	delete(st.reservations, s.NodeUUID)
	s.NodeUUID, s.AllocationUUID = "", ""
	s.UpdatedAt = c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}

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

// Reservations returns every node reservation, sorted by node UUID.
func (s *Store) Reservations() []Reservation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Reservation, 0, len(s.st.reservations))
	for _, node := range sortedKeys(s.st.reservations) {
		srv := s.st.servers[s.st.reservations[node]]
		out = append(out, Reservation{NodeUUID: node, ServerID: srv.ID, Host: srv.Host, AllocationUUID: srv.AllocationUUID})
	}
	return out
}

// ReservedBy returns the server holding a node, or "".
func (s *Store) ReservedBy(node string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.reservations[node]
}
