package cluster

import (
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip member statuses as shown by the API.
const (
	MemberAlive = "alive"
	MemberDead  = "dead"
	MemberLeft  = "left"
)

// memberMeta is carried in memberlist's node metadata (max 512 bytes).
type memberMeta struct {
	Version      int    `json:"v"`
	RaftAddr     string `json:"raft"`
	APIAddr      string `json:"api"`
	Kind         string `json:"kind"`
	Expect       int    `json:"expect,omitempty"`
	Bootstrapped bool   `json:"boot,omitempty"`
	// Leaving is announced just before a graceful leave, so that peers
	// can tell a departure from a death (memberlist reports both alike).
	Leaving bool `json:"leaving,omitempty"`
	// Settings are cluster-wide settings as this peer is configured; the
	// leader applies one only when every live peer agrees on it.
	Settings map[string]string `json:"set,omitempty"`
	// Established: this peer has seen a raft leader, so the cluster
	// exists; a peer that starts with an empty log must then catch up
	// before it votes (catchup.go).
	Established bool `json:"est,omitempty"`
	// CatchingUp: this peer started with an empty log in an established
	// cluster and has not caught up yet; the leader keeps it a non-voter.
	CatchingUp bool `json:"catchup,omitempty"`
}

// memberState is this peer's view of one gossip member.
type memberState struct {
	Name    string
	Addr    string // gossip host:port
	Status  string
	Meta    memberMeta
	Changed time.Time
	// Sealed: the metadata carries a valid MAC made with this cluster's
	// peer token for this name and gossip address (peersecret.go).
	Sealed bool
}

// gossip wraps memberlist and keeps a table of every member ever seen,
// including dead and left ones (memberlist.Members only lists live ones).
type gossip struct {
	ml     *memberlist.Memberlist
	addr   string // bound gossip address, set once under mu (memberlist's node is mutated under its own lock)
	name   string
	secret *peerSecret // seals this peer's metadata and opens the others' (nil with TLS)
	log    *slog.Logger
	events chan struct{} // poked on every membership change (non-blocking)

	mu      sync.Mutex
	meta    memberMeta
	members map[string]*memberState

	// pushMu serialises memberlist.UpdateNode: it is not safe to call from
	// two goroutines at once (the bootstrap and catch-up loops both do).
	pushMu sync.Mutex
}

func newGossip(cfg *Config, meta memberMeta, kr *keyring, secret *peerSecret, logger *slog.Logger) (*gossip, error) {
	g := &gossip{
		name:    cfg.Name,
		secret:  secret,
		log:     logger,
		events:  make(chan struct{}, 1),
		meta:    meta,
		members: map[string]*memberState{},
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Name
	mc.BindAddr = cfg.BindAddr
	mc.BindPort = cfg.GossipPort
	mc.AdvertiseAddr = cfg.BindAddr
	mc.AdvertisePort = cfg.GossipPort
	mc.ProbeInterval = cfg.Gossip.ProbeInterval
	mc.ProbeTimeout = cfg.Gossip.ProbeTimeout
	mc.SuspicionMult = cfg.Gossip.SuspicionMult
	mc.GossipInterval = cfg.Gossip.GossipInterval
	mc.PushPullInterval = cfg.Gossip.PushPullInterval
	mc.TCPTimeout = 2 * time.Second
	// A peer restarted on another address may take its name back once it has been dead this long.
	mc.DeadNodeReclaimTime = 2 * time.Second
	if kr != nil {
		// Encrypted gossip only: a member without a key of this keyring is
		// neither heard nor answered.
		mc.Keyring = kr.ring
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	mc.Delegate = g
	mc.Events = g
	mc.Logger = newMemberlistLogger(logger.With("component", "gossip"))
	if cfg.GossipCut != nil {
		t, err := cutNetTransport(cfg.BindAddr, cfg.GossipPort, mc.Logger)
		if err != nil {
			return nil, fmt.Errorf("start gossip on %s:%d: %w (is the port in use?)", cfg.BindAddr, cfg.GossipPort, err)
		}
		if cfg.GossipPort == 0 {
			// Advertise the port bound, as memberlist does with its own transport.
			mc.BindPort = t.GetAutoBindPort()
			mc.AdvertisePort = mc.BindPort
		}
		mc.Transport = &cutTransport{NetTransport: t, cut: cfg.GossipCut}
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			_ = mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("start gossip on %s:%d: %w (is the port in use?)", cfg.BindAddr, cfg.GossipPort, err)
	}
	g.ml = ml
	n := ml.LocalNode()
	g.mu.Lock()
	g.addr = net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	g.mu.Unlock()
	if secret != nil {
		g.push() // the metadata is sealed for the address memberlist bound
	}
	return g, nil
}

// Addr returns the gossip address actually bound (host:port).
func (g *gossip) Addr() string { return g.addr }

func (g *gossip) setBootstrapped() {
	g.mu.Lock()
	changed := !g.meta.Bootstrapped
	g.meta.Bootstrapped = true
	g.mu.Unlock()
	if changed {
		g.push()
	}
}

// push gossips this peer's current metadata.
func (g *gossip) push() {
	g.pushMu.Lock()
	defer g.pushMu.Unlock()
	if err := g.ml.UpdateNode(2 * time.Second); err != nil {
		g.log.Warn("gossip metadata update failed", "err", err)
	}
}

// update changes this peer's metadata with f and gossips it if f
// reports a change.
func (g *gossip) update(f func(m *memberMeta) bool) {
	g.mu.Lock()
	changed := f(&g.meta)
	g.mu.Unlock()
	if changed {
		g.push()
	}
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, _ := json.Marshal(g.meta)
	if g.secret != nil && g.addr != "" {
		b = g.secret.sealMeta(g.name, g.addr, b)
	}
	if len(b) > limit {
		g.log.Error("gossip metadata exceeds memberlist's limit", "size", len(b), "limit", limit)
		return nil
	}
	return b
}

func (g *gossip) NotifyMsg([]byte)                           {}
func (g *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *gossip) LocalState(join bool) []byte                { return nil }
func (g *gossip) MergeRemoteState(buf []byte, join bool)     {}

// NotifyJoin, NotifyLeave and NotifyUpdate implement memberlist.EventDelegate.
func (g *gossip) NotifyJoin(n *memberlist.Node)   { g.record(n, false) }
func (g *gossip) NotifyLeave(n *memberlist.Node)  { g.record(n, true) }
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.record(n, false) }

// record updates the member table. memberlist does not keep Node.State
// current, so the status comes from which event fired: a join or update
// means alive; a leave means left if the member announced it, else dead.
func (g *gossip) record(n *memberlist.Node, gone bool) {
	var meta memberMeta
	if len(n.Meta) > 0 {
		if err := json.Unmarshal(n.Meta, &meta); err != nil {
			g.log.Warn("ignoring gossip member with unreadable metadata", "member", n.Name, "err", err)
			return
		}
	}
	st := MemberAlive
	if gone {
		st = MemberDead
		if meta.Leaving {
			st = MemberLeft
		}
	}
	g.mu.Lock()
	m, ok := g.members[n.Name]
	if !ok {
		m = &memberState{Name: n.Name}
		g.members[n.Name] = m
	}
	if m.Status != st {
		g.log.Info("gossip member status", "member", n.Name, "status", st, "was", m.Status)
		m.Changed = time.Now()
	}
	m.Status = st
	m.Addr = n.Address()
	if len(n.Meta) > 0 {
		m.Meta = meta
		m.Sealed = g.secret != nil && g.secret.openMeta(n.Name, m.Addr, n.Meta)
	}
	g.mu.Unlock()
	select {
	case g.events <- struct{}{}:
	default:
	}
}

// snapshot returns the member table sorted by name.
func (g *gossip) snapshot() []memberState {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]memberState, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (g *gossip) member(name string) (memberState, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[name]
	if !ok {
		return memberState{}, false
	}
	return *m, true
}

// healthScore is memberlist's awareness of this peer's own health
// (Lifeguard): 0 when its probes get their answers in time, up to
// AwarenessMaxMultiplier-1 when they do not, as when this peer is the
// slow one (starved of CPU, its network lossy).
func (g *gossip) healthScore() int { return g.ml.GetHealthScore() }

// join contacts the given gossip addresses; it returns how many answered.
func (g *gossip) join(addrs []string) (int, error) {
	return g.ml.Join(addrs)
}

func (g *gossip) leave(timeout time.Duration) error {
	g.mu.Lock()
	g.meta.Leaving = true
	g.mu.Unlock()
	g.pushMu.Lock()
	err := g.ml.UpdateNode(timeout)
	g.pushMu.Unlock()
	if err != nil {
		g.log.Warn("announcing departure over gossip failed", "err", err)
	}
	return g.ml.Leave(timeout)
}

func (g *gossip) shutdown() error {
	return g.ml.Shutdown()
}

// cutNetTransport is the network transport under a cutTransport. On port
// 0 the kernel picks a TCP port that UDP may hold already: like
// memberlist with its own transport, it tries again then.
func cutNetTransport(addr string, port int, logger *log.Logger) (*memberlist.NetTransport, error) {
	for try := 1; ; try++ {
		t, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{addr}, BindPort: port, Logger: logger})
		if err == nil || port != 0 || try == 10 || !strings.Contains(err.Error(), "address already in use") {
			return t, err
		}
	}
}

// cutTransport drops the gossip this peer sends to the addresses cut
// reports, as a network partition would: datagrams vanish, connections
// fail. Cutting both ends' outgoing traffic cuts a link (Config.GossipCut).
type cutTransport struct {
	*memberlist.NetTransport
	cut func(addr string) bool
}

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.cut(addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *cutTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.cut(a.Addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.cut(addr) {
		return nil, fmt.Errorf("gossip to %s is cut", addr)
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *cutTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.cut(a.Addr) {
		return nil, fmt.Errorf("gossip to %s is cut", a.Addr)
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}
