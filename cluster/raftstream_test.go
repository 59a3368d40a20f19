package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/corral-dev/corral/cluster/tlsutil"
	"github.com/corral-dev/corral/testkit"
)

// testPKI writes a CA and a peer certificate for 127.0.0.1 and loads them.
func testPKI(t *testing.T, name string) *tlsutil.Config {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsutil.NewCA(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _, _ := ca.PEM()
	cert, key, err := ca.Sign(tlsutil.CertRequest{CommonName: name, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := tlsutil.Files{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem"), VerifyOutgoing: true}
	for p, b := range map[string][]byte{f.CAFile: caPEM, f.CertFile: cert, f.KeyFile: key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tlsutil.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lockedBuffer is a log sink safe for the transport's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tlsTransport(t *testing.T, c *tlsutil.Config) (*raft.NetworkTransport, *metrics, *lockedBuffer) {
	t.Helper()
	tr, _, m, logs := tlsPort(t, c)
	return tr, m, logs
}

// tlsPort is tlsTransport with the port's stream, where forwarding's RPC
// is served.
func tlsPort(t *testing.T, c *tlsutil.Config) (*raft.NetworkTransport, *peerStream, *metrics, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg := &Config{TLS: c, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	m, err := newMetrics(prometheus.NewRegistry(), &Node{})
	if err != nil {
		t.Fatal(err)
	}
	tr, st, err := newPeerTransport(cfg, "127.0.0.1:0", m, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr, st, m, logs
}

// serve answers every AppendEntries on tr with success.
func serve(tr *raft.NetworkTransport) {
	go func() {
		for rpc := range tr.Consumer() {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
		}
	}()
}

func TestRaftOverMutualTLS(t *testing.T) {
	cluster := testPKI(t, "cluster")
	a, am, alog := tlsTransport(t, cluster)
	b, _, _ := tlsTransport(t, cluster)
	serve(a)
	var resp raft.AppendEntriesResponse
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("cluster"), Term: 1}, &resp); err != nil {
		t.Fatalf("peer with the cluster's CA: %v", err)
	}
	if !resp.Success {
		t.Fatal("no answer over TLS")
	}

	stranger, _, _ := tlsTransport(t, testPKI(t, "stranger"))
	if err := stranger.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{Term: 99}, &resp); err == nil {
		t.Fatal("a peer whose certificate another CA signed reached raft")
	}
	// The stranger refused the cluster's certificate first; the other way
	// round, the cluster's listener refuses the stranger's certificate.
	if err := b.AppendEntries("s", stranger.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("cluster"), Term: 1}, &resp); err == nil {
		t.Fatal("dialed a peer whose certificate another CA signed")
	}
	// A plain TCP client that speaks raft without TLS gets nothing.
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 0, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{Term: 99}, &resp); err == nil {
		t.Fatal("a plain-text raft client was answered")
	}
	// The stranger's dial and the plain client were both refused by a.
	waitFor(t, func() bool { return counter(am.tlsRefused.WithLabelValues("raft")) >= 2 })
	if !strings.Contains(alog.String(), "refused a raft connection") {
		t.Fatalf("no log of the refused connection: %s", alog.String())
	}
}

// header is the RPC header raft writes for a sender.
func header(id string) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: []byte("127.0.0.1:1")}
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, testkit.Holds("the condition", cond))
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// signed makes a certificate for name (a peer's, or with client a CLI's)
// signed by ca, as a TLS key pair for 127.0.0.1.
func signed(t *testing.T, ca *tlsutil.CA, name string, client bool) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Sign(tlsutil.CertRequest{CommonName: name, Client: client, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadPeer writes ca and a peer certificate for name and loads them as
// that peer's [tls].
func loadPeer(t *testing.T, ca *tlsutil.CA, name string) *tlsutil.Config {
	t.Helper()
	dir := t.TempDir()
	caPEM, _, _ := ca.PEM()
	cert, key, err := ca.Sign(tlsutil.CertRequest{CommonName: name, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := tlsutil.Files{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem"), VerifyOutgoing: true}
	for p, b := range map[string][]byte{f.CAFile: caPEM, f.CertFile: cert, f.KeyFile: key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tlsutil.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dialOnly is a raft StreamLayer that only dials, over TLS with cfg: the
// raft client of someone holding that certificate.
type dialOnly struct {
	net.Listener
	cfg *tls.Config
}

func (d dialOnly) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), d.cfg)
}

func rawTransport(t *testing.T, cfg *tls.Config) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(dialOnly{Listener: ln, cfg: cfg}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// The CLI's client certificate comes from the cluster's CA, yet it cannot
// speak raft: a higher term in its hands would depose the leader.
func TestRaftRefusesClientCertificate(t *testing.T) {
	ca, err := tlsutil.NewCA("cluster", 1)
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := tlsTransport(t, loadPeer(t, ca, "a"))
	serve(a)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	cli := rawTransport(t, &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{signed(t, ca, "admin", true)}})
	var resp raft.AppendEntriesResponse
	if err := cli.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("admin"), Term: 99}, &resp); err == nil {
		t.Fatal("a client certificate sent raft an AppendEntries")
	}
	var vote raft.RequestVoteResponse
	if err := cli.RequestVote("a", a.LocalAddr(), &raft.RequestVoteRequest{Term: 99, LeadershipTransfer: true}, &vote); err == nil {
		t.Fatal("a client certificate sent raft a RequestVote")
	}
}

// A peer speaks raft only in its own name: an RPC whose header names
// another server (or none) is refused, its connection closed.
func TestRaftRefusesRPCInAnotherPeersName(t *testing.T) {
	ca, err := tlsutil.NewCA("cluster", 1)
	if err != nil {
		t.Fatal(err)
	}
	a, am, _ := tlsTransport(t, loadPeer(t, ca, "a"))
	serve(a)
	b, _, _ := tlsTransport(t, loadPeer(t, ca, "b"))
	var resp raft.AppendEntriesResponse
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1}, &resp); err != nil || !resp.Success {
		t.Fatalf("b in its own name: %v %+v", err, resp)
	}
	for _, id := range []string{"c", ""} {
		if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header(id), Term: 1}, &resp); err == nil {
			t.Fatalf("b sent an AppendEntries in the name %q", id)
		}
	}
	if got := counter(am.raftRefused.WithLabelValues(refusedSender)); got != 2 {
		t.Fatalf("refused RPCs counted %v, want 2", got)
	}
}

func tokenTransport(t testing.TB, name, token string) (*raft.NetworkTransport, *metrics) {
	t.Helper()
	tr, _, m := tokenPort(t, name, token)
	return tr, m
}

// tokenPort is tokenTransport with the port's stream.
func tokenPort(t testing.TB, name, token string) (*raft.NetworkTransport, *peerStream, *metrics) {
	t.Helper()
	cfg := &Config{Name: name, PeerToken: token, Logger: slog.New(slog.DiscardHandler)}
	m, err := newMetrics(prometheus.NewRegistry(), &Node{})
	if err != nil {
		t.Fatal(err)
	}
	tr, st, err := newPeerTransport(cfg, "127.0.0.1:0", m, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr, st, m
}

// Without TLS, raft answers only peers that prove they hold the peer
// token, and they too only in their own names; a snapshot passes through
// the guard whole.
func TestRaftNeedsThePeerToken(t *testing.T) {
	const token = "raft-peer-token-0123456789"
	a, am := tokenTransport(t, "a", token)
	got := make(chan []byte, 1)
	go func() {
		for rpc := range a.Consumer() {
			switch rpc.Command.(type) {
			case *raft.InstallSnapshotRequest:
				data, err := io.ReadAll(rpc.Reader)
				if err == nil {
					got <- data
				}
				rpc.Respond(&raft.InstallSnapshotResponse{Term: 1, Success: err == nil}, err)
			default:
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
			}
		}
	}()
	b, _ := tokenTransport(t, "b", token)
	var resp raft.AppendEntriesResponse
	entries := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte("x"), 100<<10)}}
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1, Entries: entries}, &resp); err != nil || !resp.Success {
		t.Fatalf("a peer with the token: %v %+v", err, resp)
	}
	snap := bytes.Repeat([]byte("snapshot"), 50<<10)
	var sresp raft.InstallSnapshotResponse
	if err := b.InstallSnapshot("a", a.LocalAddr(), &raft.InstallSnapshotRequest{RPCHeader: header("b"), Term: 1, Size: int64(len(snap))}, &sresp, bytes.NewReader(snap)); err != nil || !sresp.Success {
		t.Fatalf("snapshot from a peer with the token: %v %+v", err, sresp)
	}
	if data := <-got; !bytes.Equal(data, snap) {
		t.Fatalf("the snapshot arrived with %d bytes, want %d", len(data), len(snap))
	}
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("a"), Term: 1}, &resp); err == nil {
		t.Fatal("b sent an RPC in a's name")
	}
	wrong, _ := tokenTransport(t, "c", "another-token-0123456789")
	if err := wrong.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("c"), Term: 99}, &resp); err == nil {
		t.Fatal("a peer with another token reached raft")
	}
	if err := b.AppendEntries("c", wrong.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1}, &resp); err == nil {
		t.Fatal("dialed a peer with another token")
	}
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header("x"), Term: 99}, &resp); err == nil {
		t.Fatal("a plain raft client was answered")
	}
	waitFor(t, func() bool { return counter(am.raftRefused.WithLabelValues(refusedToken)) >= 2 })
	if got := counter(am.raftRefused.WithLabelValues(refusedSender)); got != 1 {
		t.Fatalf("RPCs in another's name counted %v, want 1", got)
	}
}

// BenchmarkRaftAppendEntries measures what the peer token's guard costs a
// follower per AppendEntries of 64 entries of 1 KiB, against raft's own
// TCP transport.
func BenchmarkRaftAppendEntries(b *testing.B) {
	entries := make([]*raft.Log, 64)
	for i := range entries {
		entries[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte("x"), 1024)}
	}
	req := &raft.AppendEntriesRequest{RPCHeader: header("b"), Term: 1, Entries: entries}
	run := func(b *testing.B, a, c *raft.NetworkTransport) {
		serve(a)
		var resp raft.AppendEntriesResponse
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := c.AppendEntries("a", a.LocalAddr(), req, &resp); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plain", func(b *testing.B) {
		a, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		c, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, a, c)
	})
	b.Run("guarded", func(b *testing.B) {
		a, _ := tokenTransport(b, "a", "bench-peer-token-0123456789")
		c, _ := tokenTransport(b, "b", "bench-peer-token-0123456789")
		run(b, a, c)
	})
}
