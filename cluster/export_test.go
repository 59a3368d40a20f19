package cluster

// Snapshot asks raft to take a snapshot now, so that a test can make a
// joining peer catch up from one.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }
