package cluster

import "github.com/hashicorp/raft"

// Snapshot asks raft to take a snapshot now, so that a test can make a
// joining peer catch up from one.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// TransferLeadership hands leadership to the peer named to, whose raft
// address is addr, and waits for the transfer.
func (n *Node) TransferLeadership(to, addr string) error {
	return n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr)).Error()
}

// ForgetReady makes a leader behave as one that has not yet committed an
// entry of its term (until its next term).
func (n *Node) ForgetReady() { n.readyTerm.Store(0) }
