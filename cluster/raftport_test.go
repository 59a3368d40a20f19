package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/cluster/tlsutil"
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

// rpcLeader is forwarding's leader end for the raft port's tests: it
// counts what reaches it.
type rpcLeader struct{ applies, reads atomic.Int32 }

func (l *rpcLeader) ApplyForwarded(context.Context, []byte) (uint64, error) {
	return uint64(l.applies.Add(1)), nil
}

func (l *rpcLeader) ReadIndex(context.Context, bool) (uint64, error) {
	return uint64(l.reads.Add(1)), nil
}

// servePortRPC serves forwarding's RPC for l on st, as a peer does.
func servePortRPC(t *testing.T, st *peerStream, l forward.Leader) {
	t.Helper()
	srv := forward.NewServer(l, forward.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(srv.Close)
	st.serveRPC(srv.ServeConn)
}

// rpcClientWith forwards over the RPC with dial.
func rpcClientWith(t *testing.T, dial forward.Dialer) *forward.RPCClient {
	t.Helper()
	c := forward.NewRPCClient(dial, forward.RPCClientOptions{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(c.Close)
	return c
}

// selectRPC is the dialer of someone who opened conn as it could, then
// asks for forwarding's RPC as a peer does.
func selectRPC(conn net.Conn) (net.Conn, error) {
	if _, err := conn.Write([]byte{connRPC}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	var ack [1]byte
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(conn, ack[:]); err != nil || ack[0] != rpcAck {
		_ = conn.Close()
		return nil, fmt.Errorf("no acknowledgement: %v %#x", err, ack[0])
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn, nil
}

// Forwarding's RPC shares the raft port and its peer authentication: over
// TLS, a peer's certificate is answered (and raft still is, on the same
// port); the CLI's client certificate, though the cluster's CA signed it,
// and a certificate of another CA are refused before the RPC starts, as
// raft refuses them, and nothing reaches the leader.
func TestForwardRPCOverTheRaftPortNeedsAPeerCertificate(t *testing.T) {
	ca, err := tlsutil.NewCA("cluster", 1)
	if err != nil {
		t.Fatal(err)
	}
	a, ast, am, alog := tlsPort(t, loadPeer(t, ca, "a"))
	serve(a)
	l := &rpcLeader{}
	servePortRPC(t, ast, l)
	addr := string(a.LocalAddr())

	_, bst, _, _ := tlsPort(t, loadPeer(t, ca, "b"))
	peer := rpcClientWith(t, bst.dialRPC)
	if idx, err := peer.Apply(ctxT(t, 10*time.Second), addr, []byte("cmd")); err != nil || idx != 1 {
		t.Fatalf("a peer's forwarded write: %d, %v", idx, err)
	}
	b, _, _ := tlsTransport(t, loadPeer(t, ca, "b"))
	var resp raft.AppendEntriesResponse
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1}, &resp); err != nil || !resp.Success {
		t.Fatalf("raft beside the RPC on one port: %v %+v", err, resp)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, tc := range []struct {
		name string
		cert tls.Certificate
	}{
		{"client certificate", signed(t, ca, "admin", true)},
		{"another CA's peer certificate", signed(t, mustCA(t, "stranger"), "c", false)},
	} {
		cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{tc.cert}}
		c := rpcClientWith(t, func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return selectRPC(conn)
		})
		if _, err := c.Apply(ctxT(t, 10*time.Second), addr, []byte("cmd")); !errors.Is(err, forward.ErrNotDelivered) {
			t.Errorf("%s: forwarded write: %v, want refused before delivery", tc.name, err)
		}
		if _, err := c.ReadIndex(ctxT(t, 10*time.Second), addr, true); !errors.Is(err, forward.ErrNotDelivered) {
			t.Errorf("%s: read index: %v, want refused before delivery", tc.name, err)
		}
	}
	if n, r := l.applies.Load(), l.reads.Load(); n != 1 || r != 0 {
		t.Fatalf("the leader saw %d writes and %d reads, want the peer's one write", n, r)
	}
	waitFor(t, func() bool { return counter(am.tlsRefused.WithLabelValues("raft")) >= 4 })
	if !strings.Contains(alog.String(), "refused a raft connection") {
		t.Fatalf("no log of the refused connections: %s", alog.String())
	}
}

func mustCA(t *testing.T, name string) *tlsutil.CA {
	t.Helper()
	ca, err := tlsutil.NewCA(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Without TLS, forwarding's RPC answers only a peer that proved it holds
// the peer token, as raft does: not one with another token, not one that
// asks for the RPC without the challenge. A peer that does not serve the
// RPC (as a peer of an older version) refuses it before any request, and
// still speaks raft.
func TestForwardRPCOverTheRaftPortNeedsThePeerToken(t *testing.T) {
	const token = "rpc-peer-token-0123456789"
	a, ast, am := tokenPort(t, "a", token)
	serve(a)
	l := &rpcLeader{}
	servePortRPC(t, ast, l)
	addr := string(a.LocalAddr())

	_, bst, _ := tokenPort(t, "b", token)
	peer := rpcClientWith(t, bst.dialRPC)
	if idx, err := peer.ReadIndex(ctxT(t, 10*time.Second), addr, true); err != nil || idx != 1 {
		t.Fatalf("a peer's read index: %d, %v", idx, err)
	}

	_, cst, _ := tokenPort(t, "c", "another-token-0123456789")
	if _, err := rpcClientWith(t, cst.dialRPC).Apply(ctxT(t, 10*time.Second), addr, []byte("cmd")); !errors.Is(err, forward.ErrNotDelivered) {
		t.Errorf("another token's forwarded write: %v, want refused before delivery", err)
	}
	// It asks for the RPC in as many bytes as the challenge's hello, so
	// that the listener judges them at once rather than at its deadline.
	bare := rpcClientWith(t, func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if _, err := conn.Write(make([]byte, len(raftHello)+nonceLen)); err != nil {
			return nil, err
		}
		return selectRPC(conn)
	})
	if _, err := bare.Apply(ctxT(t, 10*time.Second), addr, []byte("cmd")); !errors.Is(err, forward.ErrNotDelivered) {
		t.Errorf("a write without the challenge: %v, want refused before delivery", err)
	}
	if n, r := l.applies.Load(), l.reads.Load(); n != 0 || r != 1 {
		t.Fatalf("the leader saw %d writes and %d reads, want the peer's one read", n, r)
	}
	waitFor(t, func() bool { return counter(am.raftRefused.WithLabelValues(refusedToken)) >= 2 })

	old, _, _ := tokenPort(t, "old", token)
	serve(old)
	_, err := peer.Apply(ctxT(t, 10*time.Second), string(old.LocalAddr()), []byte("cmd"))
	if !errors.Is(err, forward.ErrNotDelivered) || !strings.Contains(err.Error(), "does not serve forwarding's RPC") {
		t.Fatalf("RPC to a peer that does not serve it: %v", err)
	}
	b, _ := tokenTransport(t, "b", token)
	var resp raft.AppendEntriesResponse
	if err := b.AppendEntries("old", old.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1}, &resp); err != nil || !resp.Success {
		t.Fatalf("raft with a peer that does not serve the RPC: %v %+v", err, resp)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
