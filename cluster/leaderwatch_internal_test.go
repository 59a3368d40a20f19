package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLeaderRank(t *testing.T) {
	servers := []raft.Server{
		{ID: "p3", Address: "a3", Suffrage: raft.Voter},
		{ID: "p1", Address: "a1", Suffrage: raft.Voter},
		{ID: "p5", Address: "a5", Suffrage: raft.Nonvoter},
		{ID: "p2", Address: "a2", Suffrage: raft.Voter},
		{ID: "p4", Address: "a4", Suffrage: raft.Voter},
	}
	for _, c := range []struct {
		self, leader raft.ServerID
		rank         int
		addr         raft.ServerAddress
	}{
		{"p1", "p2", 0, "a2"}, // p1, p3, p4 remain
		{"p3", "p2", 1, "a2"},
		{"p4", "p2", 2, "a2"},
		{"p2", "p1", 0, "a1"},
		{"p5", "p1", -1, "a1"}, // a non-voter never stands
		{"p1", "p9", 0, ""},    // a leader not in the configuration: no address to dial
	} {
		rank, addr := leaderRank(servers, c.self, c.leader)
		if rank != c.rank || addr != c.addr {
			t.Errorf("leaderRank(%s, leader %s) = %d, %q; want %d, %q", c.self, c.leader, rank, addr, c.rank, c.addr)
		}
	}
}

func TestWatchDue(t *testing.T) {
	ht := time.Second
	for _, c := range []struct {
		silent time.Duration
		rank   int
		due    bool
	}{
		{299 * time.Millisecond, 0, false}, // within the longest gap between heartbeats, and some
		{300 * time.Millisecond, 0, true},
		{350 * time.Millisecond, 1, false}, // the second waits a tenth more
		{400 * time.Millisecond, 1, true},
		{599 * time.Millisecond, 3, false},
		{600 * time.Millisecond, 3, true},
		{time.Hour, -1, false}, // not a voter
	} {
		if got := watchDue(ht, c.silent, c.rank); got != c.due {
			t.Errorf("watchDue(silent %s, rank %d) = %v; want %v", c.silent, c.rank, got, c.due)
		}
	}
}

func TestPreVoteGrant(t *testing.T) {
	for _, c := range []struct {
		name                    string
		reqTerm, logIdx, logTrm uint64
		grant                   bool
	}{
		{"same log", 6, 100, 5, true},
		{"longer log", 6, 101, 5, true},
		{"shorter log", 6, 99, 5, false},
		{"later last term, shorter log", 6, 50, 6, true},
		{"earlier last term, longer log", 6, 200, 4, false},
		{"term behind the voter's", 4, 100, 5, false},
	} {
		req := &raft.RequestPreVoteRequest{Term: c.reqTerm, LastLogIndex: c.logIdx, LastLogTerm: c.logTrm}
		if got := preVoteGrant(req, 5, 100, 5); got != c.grant {
			t.Errorf("%s: preVoteGrant = %v; want %v", c.name, got, c.grant)
		}
	}
}
