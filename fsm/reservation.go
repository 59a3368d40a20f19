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
