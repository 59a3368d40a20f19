package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
)

// LogEncoding returns the encoding of the command entry at index i of
// this peer's raft log.
func (n *Node) LogEncoding(i uint64) (fsm.Encoding, error) {
	var l raft.Log
	if err := n.parts.logs.GetLog(i, &l); err != nil {
		return 0, err
	}
	if l.Type != raft.LogCommand {
		return 0, fmt.Errorf("entry %d is a %s, not a command", i, l.Type)
	}
	e, _, err := fsm.EntryEncoding(l.Data)
	return e, err
}
