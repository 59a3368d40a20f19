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
	// heard keeps when a gossip packet last came from each watched
	// address (hearing.go).
	heard *packetLog

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
		heard:   newPacketLog(),
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
	nt, err := netTransport(cfg.BindAddr, cfg.GossipPort, mc.Logger)
	if err != nil {
		return nil, fmt.Errorf("start gossip on %s:%d: %w (is the port in use?)", cfg.BindAddr, cfg.GossipPort, err)
	}
	if cfg.GossipPort == 0 {
		// Advertise the port bound, as memberlist does with its own transport.
		mc.BindPort = nt.GetAutoBindPort()
		mc.AdvertisePort = mc.BindPort
	}
	var t memberlist.NodeAwareTransport = nt
	if cfg.GossipCut != nil {
		t = &cutTransport{NetTransport: nt, cut: cfg.GossipCut}
	}
	mc.Transport = newListeningTransport(t, g.heard)
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = mc.Transport.Shutdown()
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

// ping sends one gossip ping straight to the member name at addr
// (host:port) and reports whether its process answered within the probe
// timeout. Only a running memberlist answers: a paused process, a host cut
// off or a lost packet all go unanswered.
func (g *gossip) ping(name, addr string) bool {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return false
	}
	_, err = g.ml.Ping(name, a)
	return err == nil
}

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

// netTransport is memberlist's network transport, which this peer wraps
// (listeningTransport, and cutTransport in tests). On port 0 the kernel
// picks a TCP port that UDP may hold already: like memberlist with its
// own transport, it tries again then.
func netTransport(addr string, port int, logger *log.Logger) (*memberlist.NetTransport, error) {
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

// packetLog keeps when a gossip packet last came from each watched address
// (host:port): any packet, whatever memberlist makes of it, as a late
// answer to a ping still shows that the process runs and reaches us.
// Only addresses being watched are kept, so a stranger's packets cost
// nothing.
type packetLog struct {
	mu    sync.Mutex
	last  map[string]time.Time
	watch map[string]bool
}

func newPacketLog() *packetLog {
	return &packetLog{last: map[string]time.Time{}, watch: map[string]bool{}}
}

// watchOnly sets the addresses to keep (and forgets the others).
func (l *packetLog) watchOnly(addrs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		w[a] = true
	}
	l.watch = w
	for a := range l.last {
		if !w[a] {
			delete(l.last, a)
		}
	}
}

func (l *packetLog) saw(addr string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watch[addr] && at.After(l.last[addr]) {
		l.last[addr] = at
	}
}

// lastFrom returns when a packet last came from addr (zero: none yet).
func (l *packetLog) lastFrom(addr string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[addr]
}

// listeningTransport is memberlist's transport with every packet received
// noted in a packetLog on its way to memberlist.
type listeningTransport struct {
	memberlist.NodeAwareTransport
	log      *packetLog
	ch       chan *memberlist.Packet
	stopping chan struct{} // closed when Shutdown begins: packets are dropped
	done     chan struct{} // closed once the transport has stopped
	once     sync.Once
}

func newListeningTransport(t memberlist.NodeAwareTransport, log *packetLog) *listeningTransport {
	lt := &listeningTransport{NodeAwareTransport: t, log: log, ch: make(chan *memberlist.Packet),
		stopping: make(chan struct{}), done: make(chan struct{})}
	go lt.relay()
	return lt
}

// PacketCh implements memberlist.Transport.
func (t *listeningTransport) PacketCh() <-chan *memberlist.Packet { return t.ch }

// Shutdown implements memberlist.Transport. Meanwhile the relay drains
// the packets the listeners still hand over (they would block on them,
// and the transport's shutdown waits for them), whether or not memberlist
// still reads.
func (t *listeningTransport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.stopping)
		err = t.NodeAwareTransport.Shutdown()
		close(t.done)
	})
	return err
}

func (t *listeningTransport) relay() {
	in := t.NodeAwareTransport.PacketCh()
	for {
		select {
		case p := <-in:
			if p.From != nil {
				t.log.saw(p.From.String(), p.Timestamp)
			}
			select {
			case t.ch <- p:
			case <-t.stopping:
			}
		case <-t.done:
			return
		}
	}
}
