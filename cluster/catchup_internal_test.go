package cluster

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

func TestVoteGateRefusesVotesUntilOpen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	var refused atomic.Int64
	g := newVoteGate(ctx, b, true, func() { refused.Add(1) })
	go func() {
		for rpc := range g.Consumer() {
			switch rpc.Command.(type) {
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{Term: 7, Granted: true}, nil)
			case *raft.AppendEntriesRequest:
				rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
			}
		}
	}()
	var vr raft.RequestVoteResponse
	if err := a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 7, LastLogIndex: 100}, &vr); err != nil {
		t.Fatal(err)
	}
	if vr.Granted || refused.Load() != 1 {
		t.Fatalf("parked gate: granted %v, refused %d", vr.Granted, refused.Load())
	}
	var ar raft.AppendEntriesResponse
	if err := a.AppendEntries("b", "b", &raft.AppendEntriesRequest{Term: 7, LeaderCommitIndex: 42, Entries: []*raft.Log{{Index: 1}}}, &ar); err != nil || !ar.Success {
		t.Fatalf("append entries through the gate: %v %+v", err, ar)
	}
	if g.target.Load() != 42 {
		t.Fatalf("target %d, want the leader's commit index 42", g.target.Load())
	}
	g.open()
	if err := a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 8}, &vr); err != nil || !vr.Granted {
		t.Fatalf("open gate: %v %+v", err, vr)
	}
}
