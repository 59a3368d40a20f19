package cluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A follower's second signal of its leader's death, beside raft's
// heartbeat timeout: the leader's ports refuse connections.
//
// Raft's follower waits a random one to two heartbeat timeouts without a
// word from its leader before it stands for election, and a voter refuses
// every vote while it still names its leader. That timeout has to outlast
// a leader that is only slow (a loaded machine), so a dead leader costs
// one to two seconds with the defaults. A process that is gone, though,
// says so: its kernel refuses connections to the ports it listened on, at
// once. A paused or starved process keeps its listeners (the kernel
// accepts for it), and a partition or packet loss only delays or loses a
// dial: neither is ever taken for a refusal (liveness.go).
//
// So a voting follower that has not heard from its leader for
// leaderSilence dials the leader's raft and gossip ports. When both
// refuse, it first asks the other voters, with raft's own pre-vote
// request, whether they would elect it. A voter that still names that
// leader answers the request itself rather than raft (which would refuse
// it for the leader's sake) only when it has not heard from the leader
// for leaderHeard either and the leader's ports refuse its own dials too;
// it then grants it on raft's terms (a term and a log at least as recent
// as its own). With a majority, the follower stands at once: it hands its
// own raft a TimeoutNow, the request a leader sends at the end of a
// leadership transfer, and raft's vote requests are then granted by
// voters that still name the dead leader. A follower that is wrong about
// its leader (one that lives and that the others hear) gets no majority
// and raises no term, as with raft's pre-vote. (Raft cannot lower the
// heartbeat timeout at run time instead: ReloadConfig keeps it at least
// the leader lease, which must stay long.)
//
// Followers are ranked by name, each waiting leaderStagger more per rank,
// so that they do not all stand at once and split the vote; a follower
// that granted a vote counts it as contact (raft does) and waits again. A
// follower stands at most once per leadership: if it loses, raft's own
// timeouts take over, as before.

// leaderSilence is how long a follower waits without a word from its
// leader before it dials it: three tenths of the heartbeat timeout. The
// leader heartbeats every tenth to fifth of it (hashicorp/raft), so the
// follower has missed at least one.
func leaderSilence(heartbeat time.Duration) time.Duration { return heartbeat * 3 / 10 }

// leaderHeard is how recently a voter must not have heard from its
// leader to confirm its refusal to another: the longest gap between two
// heartbeats.
func leaderHeard(heartbeat time.Duration) time.Duration { return heartbeat / 5 }

// leaderStagger is how much longer each follower waits than the one
// ranked before it, and how long it waits before it dials again.
func leaderStagger(heartbeat time.Duration) time.Duration { return heartbeat / 10 }

// leaderWatchEvery is how often a follower looks at its leader's silence.
func leaderWatchEvery(heartbeat time.Duration) time.Duration {
	return max(heartbeat/20, 5*time.Millisecond)
}

// leaderWatch is what a follower's watch knows of its leader.
type leaderWatch struct {
	id        raft.ServerID
	term      uint64    // the term in which this peer saw it lead
	stood     bool      // this peer stood for election on its refusal
	told      bool      // it logged that too few voters agreed
	nextProbe time.Time // no dial before (after one that did not prove it gone)
}

// leaderRank is self's rank by name among the voters other than the
// leader, -1 when self is not a voter, and the leader's raft address in
// the configuration.
func leaderRank(servers []raft.Server, self, leader raft.ServerID) (rank int, leaderAddr raft.ServerAddress) {
	var names []raft.ServerID
	for _, s := range servers {
		switch {
		case s.ID == leader:
			leaderAddr = s.Address
		case s.Suffrage == raft.Voter:
			names = append(names, s.ID)
		}
	}
	slices.Sort(names)
	return slices.Index(names, self), leaderAddr
}

// watchDue reports whether a follower ranked rank that has not heard from
// its leader for silent should dial it now.
func watchDue(heartbeat, silent time.Duration, rank int) bool {
	return rank >= 0 && silent >= leaderSilence(heartbeat)+time.Duration(rank)*leaderStagger(heartbeat)
}

// preVoteGrant is raft's rule for a pre-vote (hashicorp/raft
// requestPreVote) once the leader is out of the way: the request's term
// is not behind the voter's, and the candidate's log is at least as
// recent as the voter's last entry.
func preVoteGrant(req *raft.RequestPreVoteRequest, term, lastIndex, lastTerm uint64) bool {
	return req.Term >= term && (req.LastLogTerm > lastTerm || req.LastLogTerm == lastTerm && req.LastLogIndex >= lastIndex)
}

// leaderWatchLoop runs on every peer with a network transport: while it
// follows, it watches for a leader whose ports refuse connections.
func (n *Node) leaderWatchLoop() {
	ht := n.cfg.Raft.HeartbeatTimeout
	tick := time.NewTicker(leaderWatchEvery(ht))
	defer tick.Stop()
	var w leaderWatch
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		n.watchLeader(&w, ht)
	}
}

// watchLeader is one look at the leader: it stands for election when the
// leader has been silent long enough, both its ports refuse, and a
// majority of the voters agree.
func (n *Node) watchLeader(w *leaderWatch, ht time.Duration) {
	self := raft.ServerID(n.cfg.Name)
	_, id := n.raft.LeaderWithID()
	term := n.raft.CurrentTerm()
	if id != "" && (id != w.id || term != w.term) {
		*w = leaderWatch{id: id, term: term} // a leadership: watch it afresh
	}
	if w.id == "" || w.id == self || w.stood || n.raft.State() != raft.Follower ||
		n.leaving.Load() || n.gate.parked.Load() || time.Now().Before(w.nextProbe) {
		return
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	rank, addr := leaderRank(servers, self, w.id)
	last := n.raft.LastContact()
	if addr == "" || !watchDue(ht, time.Since(last), rank) {
		return
	}
	res := n.probeLeader(n.ctx, w.id, addr)
	n.metrics.leaderProbes.WithLabelValues(res.String()).Inc()
	if res != dialRefused {
		w.nextProbe = time.Now().Add(leaderStagger(ht))
		return
	}
	granted, needed := n.preVote(servers, w.id, term, ht)
	if granted < needed {
		n.metrics.leaderRefusedElections.WithLabelValues("no_majority").Inc()
		if !w.told {
			w.told = true
			n.log.Info("the leader refuses connections here, but too few voters find it gone: not standing for election",
				"leader", string(w.id), "granted", granted, "needed", needed, "term", term)
		}
		w.nextProbe = time.Now().Add(leaderStagger(ht))
		return
	}
	// Nothing changed meanwhile: still following, no word from anyone.
	if n.raft.State() != raft.Follower || !n.raft.LastContact().Equal(last) || n.raft.CurrentTerm() != term {
		return
	}
	w.stood = true
	n.log.Warn("the leader refuses connections on its raft and gossip ports: its process is gone; standing for election now",
		"leader", string(w.id), "raft", string(addr), "silent", time.Since(last).Round(time.Millisecond),
		"term", term, "rank", rank, "granted", granted)
	if err := n.gate.timeoutNow(n.ctx, self); err != nil {
		n.log.Warn("could not stand for election on the leader's refusal", "err", err)
		return
	}
	n.metrics.leaderRefusedElections.WithLabelValues("stood").Inc()
}

// preVote sends raft's pre-vote request for term+1 to every voter but the
// leader and counts the grants, this peer's own included, against the
// majority of all voters it needs.
func (n *Node) preVote(servers []raft.Server, leader raft.ServerID, term uint64, ht time.Duration) (granted, needed int) {
	self := raft.ServerID(n.cfg.Name)
	lastIndex, lastTerm := n.lastEntry()
	req := &raft.RequestPreVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(self),
			Addr: n.gate.EncodePeer(self, n.gate.LocalAddr())},
		Term: term + 1, LastLogIndex: lastIndex, LastLogTerm: lastTerm,
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	voters, own := 0, 0
	for _, s := range servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == self {
			own = 1
			continue
		}
		if s.ID == leader {
			continue
		}
		wg.Go(func() {
			var resp raft.RequestPreVoteResponse
			done := make(chan error, 1)
			go func() { done <- n.gate.RequestPreVote(s.ID, s.Address, req, &resp) }()
			select {
			case err := <-done:
				if err == nil && resp.Granted {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			case <-time.After(leaderSilence(ht)):
			case <-n.ctx.Done():
			}
		})
	}
	wg.Wait()
	return granted + own, voters/2 + 1
}

// lastEntry is the index and term of this peer's last raft entry, in its
// log or in its last snapshot, as raft's vote rules read them.
func (n *Node) lastEntry() (index, term uint64) {
	st := n.raft.Stats()
	parse := func(k string) uint64 { v, _ := strconv.ParseUint(st[k], 10, 64); return v }
	index, term = parse("last_log_index"), parse("last_log_term")
	if si := parse("last_snapshot_index"); si > index {
		index, term = si, parse("last_snapshot_term")
	}
	return index, term
}

// answerPreVote is a voter's side: it answers a pre-vote request in
// raft's stead when raft would refuse it only because this peer still
// names a leader (another than the candidate and itself), and that leader
// is gone for this peer too: not heard from for leaderHeard and both its
// ports refuse. Otherwise raft answers, as ever.
func (n *Node) answerPreVote(req *raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool) {
	self := raft.ServerID(n.cfg.Name)
	_, id := n.raft.LeaderWithID()
	if id == "" || id == self || string(id) == string(req.ID) || n.raft.State() != raft.Follower {
		return nil, false
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil, false
	}
	servers := f.Configuration().Servers
	candidate := slices.IndexFunc(servers, func(s raft.Server) bool { return string(s.ID) == string(req.ID) })
	_, addr := leaderRank(servers, self, id)
	if candidate < 0 || servers[candidate].Suffrage != raft.Voter || addr == "" {
		return nil, false // raft refuses it
	}
	last := n.raft.LastContact()
	if time.Since(last) < leaderHeard(n.cfg.Raft.HeartbeatTimeout) {
		n.metrics.refusedLeaderPreVotes.WithLabelValues("leader_heard").Inc()
		return nil, false
	}
	if res := n.probeLeader(n.ctx, id, addr); res != dialRefused {
		n.metrics.refusedLeaderPreVotes.WithLabelValues("leader_" + res.String()).Inc()
		return nil, false
	}
	term := n.raft.CurrentTerm()
	lastIndex, lastTerm := n.lastEntry()
	resp := &raft.RequestPreVoteResponse{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(self),
			Addr: n.gate.EncodePeer(self, n.gate.LocalAddr())},
		Term:    max(term, req.Term),
		Granted: preVoteGrant(req, term, lastIndex, lastTerm),
	}
	outcome := "granted"
	if !resp.Granted {
		outcome = "log_behind"
	}
	n.metrics.refusedLeaderPreVotes.WithLabelValues(outcome).Inc()
	n.log.Info("a pre-vote request while the leader refuses connections here too: answered for raft",
		"candidate", string(req.ID), "term", req.Term, "leader", string(id), "granted", resp.Granted)
	return resp, true
}

// probeLeader dials the leader's raft port (at its address in the raft
// configuration) and its gossip port (from the host list) at once:
// refused when both refuse (the raft port alone when the gossip address
// is unknown), accepted when either accepts.
func (n *Node) probeLeader(ctx context.Context, id raft.ServerID, raftAddr raft.ServerAddress) dialResult {
	gossipAddr := ""
	if h, err := n.store.Host(string(id)); err == nil {
		gossipAddr = h.GossipAddr
	}
	if gossipAddr == "" {
		return dial(ctx, string(raftAddr))
	}
	refused, accepted := probe(ctx, string(raftAddr), gossipAddr)
	switch {
	case accepted:
		return dialAccepted
	case refused:
		return dialRefused
	}
	return dialUnknown
}

// String names a dial's outcome in metrics.
func (d dialResult) String() string {
	switch d {
	case dialRefused:
		return "refused"
	case dialAccepted:
		return "accepted"
	}
	return "no_answer"
}
