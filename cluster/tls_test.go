package cluster

import (
	"bytes"
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
	logs := &lockedBuffer{}
	cfg := &Config{TLS: c, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	m, err := newMetrics(prometheus.NewRegistry(), &Node{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTLSTransport(cfg, "127.0.0.1:0", m, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr, m, logs
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
	if err := b.AppendEntries("a", a.LocalAddr(), &raft.AppendEntriesRequest{Term: 1}, &resp); err != nil {
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
	if err := b.AppendEntries("s", stranger.LocalAddr(), &raft.AppendEntriesRequest{Term: 1}, &resp); err == nil {
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

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond) // pacing the poll
	}
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
