package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// voteGate sits between raft and its transport on a peer that started with
// an empty data dir. Until the peer has caught up with the leader it
// refuses every vote and pre-vote request itself, so that a voter that
// lost its log (a wiped or replaced disk) cannot help elect a candidate
// that misses committed entries. Everything else passes through.
//
// A peer is caught up once it has applied the commit index carried by the
// first AppendEntries it received from a leader and the leader has made it
// a non-voter (so it rejoins as a new member would); in a cluster that is
// bootstrapping (no peer has seen a leader yet) every log is empty and the
// gate opens at once.
//
// It also carries a follower's election on its leader's refused
// connections (leaderwatch.go): a pre-vote request this peer receives
// while it names a leader whose ports refuse its own dials is answered by
// answer instead of raft, and timeoutNow hands raft the request that makes
// it stand at once.
type voteGate struct {
	raft.Transport
	out     chan raft.RPC
	parked  atomic.Bool
	target  atomic.Uint64 // leader commit index to reach; 0: none seen yet
	refused func()        // counts a refused vote
	answer  atomic.Pointer[preVoteAnswer]
}

// preVoteAnswer answers a pre-vote request in raft's stead, or returns
// false to leave it to raft.
type preVoteAnswer func(*raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool)

func newVoteGate(ctx context.Context, t raft.Transport, parked bool, refused func()) *voteGate {
	g := &voteGate{Transport: t, out: make(chan raft.RPC), refused: refused}
	g.parked.Store(parked)
	go g.loop(ctx)
	return g
}

// Consumer implements raft.Transport.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

// RequestPreVote implements raft.WithPreVote when the transport does.
func (g *voteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if p, ok := g.Transport.(raft.WithPreVote); ok {
		return p.RequestPreVote(id, target, args, resp)
	}
	return raft.ErrUnsupportedProtocol
}

// timeoutNow hands raft a TimeoutNow, as a leader does at the end of a
// leadership transfer: raft stands for election at once, without a
// pre-vote, and its vote requests are granted by voters that still name
// a leader.
func (g *voteGate) timeoutNow(ctx context.Context, self raft.ServerID) error {
	resp := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(self), Addr: g.EncodePeer(self, g.LocalAddr()),
	}}, RespChan: resp}
	select {
	case g.out <- rpc:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case r := <-resp:
		return r.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements raft.WithClose when the transport does.
func (g *voteGate) Close() error {
	if c, ok := g.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

func (g *voteGate) open() { g.parked.Store(false) }

func (g *voteGate) loop(ctx context.Context) {
	in := g.Transport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case <-ctx.Done():
			return
		case rpc = <-in:
		}
		switch req := rpc.Command.(type) {
		case *raft.RequestVoteRequest:
			if g.parked.Load() {
				g.refused()
				rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: false}, nil)
				continue
			}
		case *raft.RequestPreVoteRequest:
			if g.parked.Load() {
				g.refused()
				rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: false}, nil)
				continue
			}
			if answer := g.answer.Load(); answer != nil {
				// The answer may dial: the other requests go on meanwhile.
				go func() {
					if resp, ok := (*answer)(req); ok {
						rpc.Respond(resp, nil)
						return
					}
					select {
					case g.out <- rpc:
					case <-ctx.Done():
					}
				}()
				continue
			}
		case *raft.AppendEntriesRequest:
			if req.LeaderCommitIndex > 0 {
				g.target.CompareAndSwap(0, req.LeaderCommitIndex)
			}
		}
		select {
		case g.out <- rpc:
		case <-ctx.Done():
			return
		}
	}
}

// catchupGrace is how long a caught-up peer waits for the leader to make
// it a non-voter before it votes anyway.
const catchupGrace = 10 * time.Second

// catchupLoop runs on a peer that started with an empty data dir: it
// announces in gossip that it is catching up when it finds an established
// cluster (the leader then keeps it a non-voter), and opens the vote gate
// once it has caught up, or at once when the cluster is only bootstrapping.
func (n *Node) catchupLoop() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	announced := false
	nonvoter := false // the leader has made this peer a non-voter
	var caughtAt time.Time
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		if !n.gate.parked.Load() {
			break
		}
		established, alive := false, 0
		for _, m := range n.admitted(n.ctx, n.gossip.snapshot(), nil) {
			if m.Status != MemberAlive {
				continue
			}
			alive++
			established = established || m.Name != n.cfg.Name && m.Meta.Established
		}
		switch {
		case !established && n.cfg.BootstrapExpect > 0 && alive >= n.cfg.BootstrapExpect:
			n.log.Info("cluster is bootstrapping: this peer votes with its empty log")
			n.gate.open()
		case established && !announced:
			n.log.Warn("this peer has no raft log and the cluster exists: it takes no part in elections until it has caught up")
			n.gossip.update(func(m *memberMeta) bool { changed := !m.CatchingUp; m.CatchingUp = true; return changed })
			announced = true
		}
		nonvoter = nonvoter || n.suffrageOf(n.cfg.Name) == raft.Nonvoter
		caught := false
		if t := n.gate.target.Load(); t > 0 && n.raft.AppliedIndex() >= t {
			if caughtAt.IsZero() {
				caughtAt = time.Now()
			}
			// Caught up: vote once the leader has made this peer a
			// non-voter, or after a grace if it never does (a leader of an
			// older version that does not demote).
			caught = nonvoter || time.Since(caughtAt) > catchupGrace
		}
		if t := n.gate.target.Load(); caught {
			n.log.Info("caught up with the leader: this peer votes again", "applied", n.raft.AppliedIndex(), "leader_commit", t)
			n.gate.open()
			n.metrics.caughtUp.Inc()
		}
	}
	n.gossip.update(func(m *memberMeta) bool { changed := m.CatchingUp; m.CatchingUp = false; return changed })
	n.establishLoop()
}

// establishLoop marks this peer established in gossip once it has seen a
// leader: from then on a peer that starts empty knows that it must catch
// up before it votes.
func (n *Node) establishLoop() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if addr, _ := n.raft.LeaderWithID(); addr != "" {
			n.gossip.update(func(m *memberMeta) bool { changed := !m.Established; m.Established = true; return changed })
			return
		}
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// suffrageOf returns the suffrage of a server in this peer's latest raft
// configuration; -1 when it is not in it.
func (n *Node) suffrageOf(name string) raft.ServerSuffrage {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return -1
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == name {
			return s.Suffrage
		}
	}
	return -1
}
