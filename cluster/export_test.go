package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// Snapshot asks raft to take a snapshot now, so that a test can make a
// joining peer catch up from one.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// ObserveVotes records the vote requests this peer receives until the
// returned stop is called: a test tells an election raft held after a
// leadership transfer (LeadershipTransfer set) from one a timeout started.
func (n *Node) ObserveVotes() (votes func() []raft.RequestVoteRequest, stop func()) {
	var mu sync.Mutex
	var got []raft.RequestVoteRequest
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RequestVoteRequest)
		return ok
	})
	n.raft.RegisterObserver(obs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case o := <-ch:
				mu.Lock()
				got = append(got, o.Data.(raft.RequestVoteRequest))
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() []raft.RequestVoteRequest {
			mu.Lock()
			defer mu.Unlock()
			return append([]raft.RequestVoteRequest(nil), got...)
		}, func() {
			once.Do(func() {
				n.raft.DeregisterObserver(obs)
				close(done)
			})
		}
}

// TransferLeadership hands leadership to the peer named to, whose raft
// address is addr, and waits for the transfer.
func (n *Node) TransferLeadership(to, addr string) error {
	return n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr)).Error()
}

// ForgetReady makes a leader behave as one that has not yet committed an
// entry of its term (until its next term).
func (n *Node) ForgetReady() { n.readyTerm.Store(0) }

// StandNow has this peer stand for election at once, as a leader's
// TimeoutNow, or its own watch on a leader that refuses connections, has
// it do (leaderwatch.go).
func (n *Node) StandNow() error { return n.gate.timeoutNow(n.ctx, raft.ServerID(n.cfg.Name)) }

// PreVoteOnRefusal asks the other voters the pre-vote a follower asks
// when its leader's ports refuse connections, as if this peer's did.
func (n *Node) PreVoteOnRefusal() (granted, needed int) {
	_, id := n.raft.LeaderWithID()
	servers := n.raft.GetConfiguration().Configuration().Servers
	return n.preVote(servers, id, n.raft.CurrentTerm(), n.cfg.Raft.HeartbeatTimeout)
}
