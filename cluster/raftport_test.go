package cluster

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A machine that reaches a peer's raft port without the peer token cannot
// depose its leader with a higher term, by AppendEntries or by a vote.
func TestRaftPortRefusesStrangers(t *testing.T) {
	port := freeTCPPort(t)
	n, err := New(Config{Name: "solo", DataDir: t.TempDir(), BindAddr: "127.0.0.1", RaftPort: port, APIAddr: "127.0.0.1:1",
		BootstrapExpect: 1, PeerToken: "raft-port-peer-token-0123", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	waitFor(t, n.IsLeader)
	term := n.raft.CurrentTerm()
	stranger, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	addr := raft.ServerAddress(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	var resp raft.AppendEntriesResponse
	aerr := stranger.AppendEntries("solo", addr, &raft.AppendEntriesRequest{RPCHeader: header("intruder"), Term: term + 50}, &resp)
	var vote raft.RequestVoteResponse
	verr := stranger.RequestVote("solo", addr, &raft.RequestVoteRequest{Term: term + 100, LeadershipTransfer: true}, &vote)
	if aerr == nil || verr == nil {
		t.Errorf("a stranger's RPCs were answered: AppendEntries %v, RequestVote %v", aerr, verr)
	}
	if got := n.raft.CurrentTerm(); got != term || !n.IsLeader() {
		t.Fatalf("after a stranger's RPCs: term %d (was %d), leader %v", got, term, n.IsLeader())
	}
}
