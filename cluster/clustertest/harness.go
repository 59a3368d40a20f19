package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// PeerToken is the peer token of every harness peer (Options.Tweak may
// change it).
const PeerToken = "clustertest-peer-token-0123456789"

// Options tune a harness.
type Options struct {
	// Tweak may adjust each peer's configuration before it starts.
	Tweak func(cfg *cluster.Config)
	// Logger for all peers (default: info and above through t.Log, shown
	// when the test fails or runs with -v).
	Logger *slog.Logger
	// Network has the peers talk as separate processes do: raft and
	// forwarding's RPC on raft ports of their own on loopback, behind the
	// peer token's handshake, and HTTP forwarding to an API address each
	// peer serves (the forwarding endpoints at Config.PeerPaths, or what
	// Peer.Serve installs). Partition and CutRaft need the in-memory
	// transports: a test of Network peers cannot call them.
	Network bool
}

// ForwardPaths are where a Network peer's API serves forwarding unless
// Options.Tweak sets Config.PeerPaths.
var ForwardPaths = forward.Paths{Apply: "/internal/apply", ReadIndex: "/internal/read-index"}

// Peer is one in-process peer.
type Peer struct {
	Name     string
	Node     *cluster.Node
	Registry *prometheus.Registry
	dataDir  string
	trans    *raft.InmemTransport // nil with Options.Network
	gport    int

	// With Options.Network:
	raftPort int
	api      net.Listener
	apiSrv   *http.Server
	paths    forward.Paths
	handler  atomic.Value // http.Handler installed by Serve
}

// Harness is a set of in-process peers.
type Harness struct {
	t    testing.TB
	opts Options
	tlog *testWriter

	mu          sync.Mutex
	peers       map[string]*Peer
	partitioned map[string]bool   // cut off entirely: raft, gossip, forwarding
	raftCut     map[string]bool   // raft transport cut only
	byGossip    map[string]string // gossip address → peer name
}

// Timings of harness peers. Gossip's are short, so that failure
// detection takes a fraction of a second. Raft's are a second: a test
// waits about that long for a new leader, but CI runs the tests with
// -race on two cores shared with other builds, where a goroutine may not
// run for some hundreds of milliseconds. With 300 ms an idle 3-peer
// cluster changed leaders 11 times in a minute on such a machine, and a
// test's write or request in between failed with "leadership lost" or
// 503 no_leader; with a second, once. The lease stays as long as the
// heartbeat timeout, so that a leader does not step down between two
// heartbeats. An RPC between peers may take as long as over the peers'
// TCP transport (5 s, cluster/raftstream.go), where the in-memory
// transport's default (500 ms) dropped votes and heartbeats that were
// only late.
var (
	rpcTimeout  = 5 * time.Second
	raftTimings = cluster.RaftTimings{
		HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLeaseTimeout: time.Second, CommitTimeout: 5 * time.Millisecond,
	}
	gossipTimings = cluster.GossipTimings{
		ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond,
		GossipInterval: 50 * time.Millisecond, PushPullInterval: time.Second,
	}
)

// Start runs n peers p1..pn bootstrapped with --bootstrap-expect n.
func Start(t testing.TB, n int, opts Options) *Harness {
	t.Helper()
	h := &Harness{t: t, opts: opts, peers: map[string]*Peer{}, partitioned: map[string]bool{},
		raftCut: map[string]bool{}, byGossip: map[string]string{}}
	if h.opts.Logger == nil {
		h.tlog = &testWriter{t: t}
		h.opts.Logger = slog.New(slog.NewTextHandler(h.tlog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	t.Cleanup(h.Close)
	for i := 1; i <= n; i++ {
		h.Add(fmt.Sprintf("p%d", i), n)
	}
	return h
}

// Add starts a new peer; expect is its --bootstrap-expect (0 to join an
// existing cluster). Its gossip binds a port the kernel picks (a port
// chosen free beforehand may be any connection's source port by the time
// the peer binds it); a restart binds the same one again.
func (h *Harness) Add(name string, expect int) *Peer {
	h.t.Helper()
	p := &Peer{Name: name, dataDir: h.t.TempDir()}
	if h.opts.Network {
		p.raftPort = freePort(h.t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.t.Fatalf("listen for %s's API: %v", name, err)
		}
		p.api, p.apiSrv = ln, &http.Server{Handler: h.serveAPI(p), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = p.apiSrv.Serve(ln) }()
	}
	h.start(p, expect)
	_, port, err := net.SplitHostPort(p.Node.GossipAddr())
	if p.gport, _ = strconv.Atoi(port); err != nil || p.gport == 0 {
		h.t.Fatalf("peer %s gossips on %q", name, p.Node.GossipAddr())
	}
	h.mu.Lock()
	h.byGossip[net.JoinHostPort("127.0.0.1", port)] = name
	h.mu.Unlock()
	return p
}

func (h *Harness) start(p *Peer, expect int) {
	h.t.Helper()
	h.mu.Lock()
	if !h.opts.Network {
		_, p.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(p.Name), rpcTimeout)
		for _, o := range h.peers {
			if o.Node != nil && h.raftLinked(o.Name, p.Name) {
				p.trans.Connect(o.trans.LocalAddr(), o.trans)
				o.trans.Connect(p.trans.LocalAddr(), p.trans)
			}
		}
	}
	var join []string
	for _, o := range h.peers {
		if o != p && o.Node != nil {
			join = append(join, o.Node.GossipAddr())
		}
	}
	h.mu.Unlock()
	p.Registry = prometheus.NewRegistry()
	cfg := cluster.Config{
		Name:            p.Name,
		DataDir:         p.dataDir,
		BindAddr:        "127.0.0.1",
		GossipPort:      p.gport,
		APIAddr:         p.Name + ".api:1",
		Join:            join,
		BootstrapExpect: expect,
		Transport:       p.trans,
		Forwarder:       &memForwarder{h: h, from: p.Name},
		GossipCut:       func(addr string) bool { return h.gossipCut(p.Name, addr) },
		Logger:          h.opts.Logger,
		Registry:        p.Registry,
		Store:           fsm.New(),
		Raft:            raftTimings,
		Gossip:          gossipTimings,
		PeerToken:       PeerToken,
	}
	if h.opts.Network {
		cfg.Transport, cfg.Forwarder = nil, nil
		cfg.RaftPort, cfg.APIAddr = p.raftPort, p.api.Addr().String()
		cfg.PeerPaths.Paths = ForwardPaths
	}
	if h.opts.Tweak != nil {
		h.opts.Tweak(&cfg)
	}
	n, err := cluster.New(cfg)
	if err != nil {
		h.t.Fatalf("start peer %s: %v", p.Name, err)
	}
	h.mu.Lock()
	p.Node, p.paths = n, cfg.PeerPaths.Paths
	h.peers[p.Name] = p
	h.mu.Unlock()
}

// Peer returns a peer by name.
func (h *Harness) Peer(name string) *Peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peers[name]
}

// Running returns the running peers sorted by name.
func (h *Harness) Running() []*Peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Peer
	for _, p := range h.peers {
		if p.Node != nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Kill stops a peer abruptly (no leave), keeping its data dir.
func (h *Harness) Kill(name string) {
	h.t.Helper()
	p := h.Peer(name)
	h.mu.Lock()
	for _, o := range h.peers {
		if o != p && o.Node != nil && o.trans != nil {
			o.trans.Disconnect(p.trans.LocalAddr())
		}
	}
	h.mu.Unlock()
	if err := p.Node.Shutdown(); err != nil {
		h.t.Logf("shutdown %s: %v", name, err)
	}
	h.mu.Lock()
	p.Node = nil
	h.mu.Unlock()
}

// Restart starts a killed peer again on its data dir.
func (h *Harness) Restart(name string) {
	h.t.Helper()
	h.start(h.Peer(name), 0)
}

// DataDir is the peer's current data dir.
func (p *Peer) DataDir() string { return p.dataDir }

// RaftAddr is the address of the peer's raft transport.
func (p *Peer) RaftAddr() string {
	if p.trans == nil {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.raftPort))
	}
	return string(p.trans.LocalAddr())
}

// APIAddr is the address of a Network peer's API.
func (p *Peer) APIAddr() string { return p.api.Addr().String() }

// Serve has a Network peer's API address serve hh from now on, in place
// of forwarding's endpoints alone (the API of the peer's node, say).
func (p *Peer) Serve(hh http.Handler) { p.handler.Store(hh) }

// serveAPI is a Network peer's API: what Serve installed, or forwarding's
// endpoints for peers only, as the API serves them.
func (h *Harness) serveAPI(p *Peer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hh, ok := p.handler.Load().(http.Handler); ok {
			hh.ServeHTTP(w, r)
			return
		}
		h.mu.Lock()
		n, paths := p.Node, p.paths
		h.mu.Unlock()
		if n == nil {
			forward.WriteError(w, http.StatusServiceUnavailable, forward.ErrNoLeader)
			return
		}
		if _, err := n.AuthenticatePeer(r); err != nil {
			forward.WriteError(w, http.StatusUnauthorized, err)
			return
		}
		forward.NewHandler(n, paths).ServeHTTP(w, r)
	})
}

// inMemory fails the test when the peers talk over the network.
func (h *Harness) inMemory(what string) {
	h.t.Helper()
	if h.opts.Network {
		h.t.Fatalf("%s cuts the in-memory transports: not available with Options.Network", what)
	}
}

// Wipe starts a killed peer again under the same name on a new, empty
// data dir, as after a disk replacement. The old data dir is left as is.
func (h *Harness) Wipe(name string) {
	h.t.Helper()
	p := h.Peer(name)
	p.dataDir = h.t.TempDir()
	h.start(p, 0)
}

// Partition cuts a peer off from all others: its raft transport, its
// gossip (both ways, so each side comes to see the other dead) and
// forwarding.
func (h *Harness) Partition(name string) {
	h.inMemory("Partition")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.partitioned[name] = true
	h.disconnectRaft(name)
}

// CutRaft cuts only a peer's raft transport from all others: gossip and
// forwarding still work, so the peer stays a live member that can reach
// the leader's API, but it receives no more log entries and its replica
// lags. A peer that should keep believing in its leader meanwhile needs a
// long heartbeat timeout (Options.Tweak).
func (h *Harness) CutRaft(name string) {
	h.inMemory("CutRaft")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.raftCut[name] = true
	h.disconnectRaft(name)
}

func (h *Harness) disconnectRaft(name string) {
	p := h.peers[name]
	p.trans.DisconnectAll()
	for _, o := range h.peers {
		if o != p && o.Node != nil {
			o.trans.Disconnect(p.trans.LocalAddr())
		}
	}
}

// Heal undoes Partition and CutRaft for a peer.
func (h *Harness) Heal(name string) {
	h.inMemory("Heal")
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.partitioned, name)
	delete(h.raftCut, name)
	p := h.peers[name]
	for _, o := range h.peers {
		if o != p && o.Node != nil && h.raftLinked(o.Name, name) {
			p.trans.Connect(o.trans.LocalAddr(), o.trans)
			o.trans.Connect(p.trans.LocalAddr(), p.trans)
		}
	}
}

// raftLinked reports whether raft may flow between two peers (h.mu held).
func (h *Harness) raftLinked(a, b string) bool {
	return !h.partitioned[a] && !h.partitioned[b] && !h.raftCut[a] && !h.raftCut[b]
}

// gossipCut reports whether gossip from peer to addr is cut.
func (h *Harness) gossipCut(from, addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.partitioned[from] || h.partitioned[h.byGossip[addr]]
}

// Leader waits for a leader among the running, non-partitioned peers.
func (h *Harness) Leader(timeout time.Duration) *Peer {
	h.t.Helper()
	var leader *Peer
	testkit.Eventually(h.t, timeout, func() error {
		leader = nil
		for _, p := range h.Running() {
			h.mu.Lock()
			cut := h.partitioned[p.Name]
			h.mu.Unlock()
			if !cut && p.Node.IsLeader() {
				leader = p
				return nil
			}
		}
		return fmt.Errorf("no leader among %s", h.names())
	})
	return leader
}

// Followers returns the running peers other than the given one.
func (h *Harness) Followers(leader *Peer) []*Peer {
	var out []*Peer
	for _, p := range h.Running() {
		if p != leader {
			out = append(out, p)
		}
	}
	return out
}

func (h *Harness) names() string {
	var n []string
	for _, p := range h.Running() {
		n = append(n, p.Name)
	}
	return strings.Join(n, ",")
}

// Close stops every running peer. Logs written after it are dropped:
// the test they would go to has ended.
func (h *Harness) Close() {
	for _, p := range h.Running() {
		_ = p.Node.Shutdown()
		h.mu.Lock()
		p.Node = nil
		h.mu.Unlock()
	}
	h.mu.Lock()
	for _, p := range h.peers {
		if p.apiSrv != nil {
			_ = p.apiSrv.Close()
		}
	}
	h.mu.Unlock()
	if h.tlog != nil {
		h.tlog.close()
	}
}

// testWriter writes log lines through t.Log until it is closed.
type testWriter struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// memForwarder forwards in memory to the peer whose API address matches,
// failing as undelivered across a partition.
type memForwarder struct {
	h    *Harness
	from string
}

func (f *memForwarder) target(api string) (*cluster.Node, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	if f.h.partitioned[f.from] {
		return nil, fmt.Errorf("%w: %s is partitioned", forward.ErrNotDelivered, f.from)
	}
	for _, p := range f.h.peers {
		if p.Node != nil && p.Name+".api:1" == api {
			if f.h.partitioned[p.Name] {
				return nil, fmt.Errorf("%w: %s is partitioned", forward.ErrNotDelivered, p.Name)
			}
			return p.Node, nil
		}
	}
	return nil, fmt.Errorf("%w: no peer serves %s", forward.ErrNotDelivered, api)
}

func (f *memForwarder) Apply(ctx context.Context, api string, data []byte) (uint64, error) {
	n, err := f.target(api)
	if err != nil {
		return 0, err
	}
	return n.ApplyForwarded(ctx, data)
}

func (f *memForwarder) ReadIndex(ctx context.Context, api string, verify bool) (uint64, error) {
	n, err := f.target(api)
	if err != nil {
		return 0, err
	}
	return n.ReadIndex(ctx, verify)
}

// freePort is a TCP port free a moment ago, for the raft port of a peer of a
// Network harness (raft binds the port it is given).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
