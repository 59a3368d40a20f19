package security

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

// tlsDialer is a raft StreamLayer that only dials, over TLS with cfg.
type tlsDialer struct {
	net.Listener
	cfg *tls.Config
}

func (d tlsDialer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), d.cfg)
}

// raftClient is raft's own client: plain TCP, or over TLS with cfg.
func raftClient(t *testing.T, cfg *tls.Config) raft.Transport {
	t.Helper()
	if cfg == nil {
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(tlsDialer{Listener: ln, cfg: cfg}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// depose sends the leader an AppendEntries and a RequestVote with a term
// far above its own, as a stranger deposing it would; it fails the test
// when raft answers either or the leader's term moved.
func depose(t *testing.T, tr raft.Transport, leader *e2e.Agent) {
	t.Helper()
	ctx, cancel := ctx10()
	defer cancel()
	before, err := leader.Raft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := raft.ServerAddress(net.JoinHostPort(leader.IP, strconv.Itoa(leader.RaftPort)))
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(leader.Name), Addr: []byte(addr)}
	var resp raft.AppendEntriesResponse
	if err := tr.AppendEntries(raft.ServerID(leader.Name), addr, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: before.Term + 50}, &resp); err == nil {
		t.Errorf("raft answered an AppendEntries of term %d", before.Term+50)
	}
	var vote raft.RequestVoteResponse
	if err := tr.RequestVote(raft.ServerID(leader.Name), addr, &raft.RequestVoteRequest{Term: before.Term + 100, LeadershipTransfer: true}, &vote); err == nil {
		t.Errorf("raft answered a RequestVote of term %d", before.Term+100)
	}
	after, err := leader.Raft(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Term != before.Term || after.State != "leader" {
		t.Fatalf("the leader went from term %d to %d (%s)", before.Term, after.Term, after.State)
	}
}

// get sends a GET with token through client hc and returns the status.
func get(t *testing.T, hc *http.Client, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Auth-Token", token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// TestOnlyPeersReachRaftAndForwarding: without TLS, a machine that
// reaches the raft port but holds no peer token cannot depose the leader;
// the peers' endpoints take the peer token, not the admin token; and the
// peer token is no credential on the public API.
func TestOnlyPeersReachRaftAndForwarding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := e2e.Start(t, 3, e2e.Options{BaseIP: 21})
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	depose(t, raftClient(t, nil), leader)

	hc := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{api.ReadIndexPath, c.Token, http.StatusForbidden},
		{api.ReadIndexPath, c.PeerToken, http.StatusOK},
		{"/v1/hosts", c.PeerToken, http.StatusUnauthorized},
		{"/v1/hosts", c.Token, http.StatusOK},
	} {
		who := "the admin token"
		if tc.token == c.PeerToken {
			who = "the peer token"
		}
		if got := get(t, hc, leader.URL()+tc.path, tc.token); got != tc.want {
			t.Errorf("%s on %s: %d, want %d", who, tc.path, got, tc.want)
		}
	}
	// Forwarding between the peers works: a write through each follower.
	for i, a := range c.Agents {
		testkit.Eventually(t, 20*time.Second, func() error { return createFlavor(a, fmt.Sprintf("through-%d", i)) })
	}
	forwardedOverRPC(t, c, leader)
}

// forwardedOverRPC checks that every follower forwarded over the binary
// RPC on the leader's raft port, after the peers' handshake.
func forwardedOverRPC(t *testing.T, c *e2e.Cluster, leader *e2e.Agent) {
	t.Helper()
	for _, a := range c.Agents {
		if a == leader {
			continue
		}
		n, err := metric(a, `corral_forward_rpc_requests_total{op="apply",outcome="ok"}`)
		if err != nil || n < 1 {
			t.Errorf("%s forwarded %v writes over the RPC (%v), want at least one", a.Name, n, err)
		}
	}
}

// TestClientCertificateIsNoPeer: with TLS, the CLI's certificate (`corral
// tls cert create --client`, from the cluster's CA) reaches the public API
// only: raft refuses it, and so do the peers' endpoints, whatever token
// comes with it.
func TestClientCertificateIsNoPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	p := newPKI(t, bin)
	c := startTLS(t, p, 3, 25, keygen(t, bin))
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	cli := p.clientTLS("operator")
	raftTLS := cli.Clone()
	raftTLS.ServerName = leader.IP
	depose(t, raftClient(t, raftTLS), leader)

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cli}, Timeout: 10 * time.Second}
	if got := get(t, hc, leader.URL()+"/v1/hosts", c.Token); got != http.StatusOK {
		t.Fatalf("the CLI's certificate on the public API: %d", got)
	}
	for _, token := range []string{c.Token, c.PeerToken} {
		if got := get(t, hc, leader.URL()+api.ReadIndexPath, token); got != http.StatusForbidden {
			t.Errorf("the CLI's certificate with token %s… on read-index: %d, want 403", token[:8], got)
		}
	}
	// A follower's write reaches the leader: peers forward with their
	// certificates.
	for _, a := range c.Agents {
		if a != leader {
			testkit.Eventually(t, 20*time.Second, func() error { return createFlavor(a, "through-"+a.Name) })
		}
	}
	forwardedOverRPC(t, c, leader)
}
