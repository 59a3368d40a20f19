package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// admissionRecheck is how long a refused member waits before its
// certificate is checked again.
const admissionRecheck = 10 * time.Second

// admission tells peers from strangers among the gossip members. Only an
// admitted member counts anywhere: in raft membership and the host list,
// in the settings every peer must agree on (AgreedSetting), in the
// command types every peer knows (CommandKnown), in bootstrap_expect, and
// as a peer to call (PeerAPIs, the leader's API).
//
//   - With TLS, a member is admitted once a mutual-TLS handshake with its
//     raft address has shown a peer certificate from the cluster's CA
//     that names the member, or when raft already has it at that
//     address. Its gossip and raft addresses must be on one host (a peer
//     binds one address for both).
//   - Without TLS, a member is admitted when its gossip metadata is sealed
//     with the peer token for its name and gossip address (peersecret.go).
//
// With gossip encryption, memberlist itself drops machines without a key
// of the keyring before any of this.
type admission struct {
	secret *peerSecret // without TLS
	// dial checks the peer certificate at a raft address (with TLS; nil
	// with an in-memory transport, a test seam: every member is admitted).
	dial func(ctx context.Context, addr, name string) error
	tls  bool

	mu      sync.Mutex
	checked map[string]admitted // member name → last verdict
}

type admitted struct {
	gossip, raft string
	ok           bool
	at           time.Time
}

func newAdmission(n *Node) *admission {
	a := &admission{checked: map[string]admitted{}, tls: n.cfg.TLS != nil}
	if !a.tls {
		a.secret = newPeerSecret(n.cfg.PeerToken)
		return a
	}
	if n.cfg.Transport == nil {
		a.dial = func(ctx context.Context, addr, name string) error {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return fmt.Errorf("raft address %s: %w", addr, err)
			}
			d := net.Dialer{Timeout: 2 * time.Second}
			raw, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			defer raw.Close()
			ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
			defer cancel()
			return tls.Client(raw, n.cfg.TLS.PeerClientFor(host, name)).HandshakeContext(ctx)
		}
	}
	return a
}

// admitted returns the members that count: see admission. It may dial a
// member's raft address (with TLS) to check its certificate; inRaft is the
// raft configuration by ID (nil: read it here).
func (n *Node) admitted(ctx context.Context, members []memberState, inRaft map[raft.ServerID]raft.Server) []memberState {
	return n.admit.filter(ctx, n, members, inRaft, true)
}

// counted is admitted without dialing anyone: a member not checked yet
// does not count. It serves the calls that must answer at once.
func (n *Node) counted(members []memberState) []memberState {
	return n.admit.filter(n.ctx, n, members, nil, false)
}

// admittedMember returns the member of that name when it counts.
func (n *Node) admittedMember(name string) (memberState, bool) {
	m, ok := n.gossip.member(name)
	if !ok || len(n.counted([]memberState{m})) == 0 {
		return memberState{}, false
	}
	return m, true
}

func (a *admission) filter(ctx context.Context, n *Node, members []memberState, inRaft map[raft.ServerID]raft.Server, dial bool) []memberState {
	if a.tls && a.dial == nil {
		return members
	}
	if a.tls && inRaft == nil {
		inRaft = map[raft.ServerID]raft.Server{}
		if f := n.raft.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				inRaft[s.ID] = s
			}
		}
	}
	out := members[:0:0]
	for _, m := range members {
		if m.Name == n.cfg.Name || a.admits(ctx, n, m, inRaft, dial) {
			out = append(out, m)
		}
	}
	return out
}

func (a *admission) admits(ctx context.Context, n *Node, m memberState, inRaft map[raft.ServerID]raft.Server, dial bool) bool {
	if !a.tls {
		a.record(n, m, m.Sealed, "its gossip metadata is not sealed with this cluster's peer token (check [auth] peer_token)")
		return m.Sealed
	}
	if !sameHost(m.Addr, m.Meta.RaftAddr) {
		a.record(n, m, false, "its gossip and raft addresses are on different hosts")
		return false
	}
	if s, ok := inRaft[raft.ServerID(m.Name)]; ok && string(s.Address) == m.Meta.RaftAddr {
		return true
	}
	a.mu.Lock()
	prev, seen := a.checked[m.Name]
	a.mu.Unlock()
	same := seen && prev.gossip == m.Addr && prev.raft == m.Meta.RaftAddr
	switch {
	case same && (prev.ok || time.Since(prev.at) < admissionRecheck):
		return prev.ok
	case !dial || m.Status != MemberAlive || m.Meta.RaftAddr == "" || ctx.Err() != nil:
		return false
	}
	err := a.dial(ctx, m.Meta.RaftAddr, m.Name)
	if err != nil {
		a.record(n, m, false, fmt.Sprintf("no peer certificate naming it from this cluster's CA at its raft address: %v", err))
		return false
	}
	a.record(n, m, true, "")
	return true
}

// record keeps a verdict, logging and counting a change.
func (a *admission) record(n *Node, m memberState, ok bool, why string) {
	a.mu.Lock()
	prev, seen := a.checked[m.Name]
	changed := !seen || prev.ok != ok || prev.gossip != m.Addr || prev.raft != m.Meta.RaftAddr
	a.checked[m.Name] = admitted{gossip: m.Addr, raft: m.Meta.RaftAddr, ok: ok, at: time.Now()}
	a.mu.Unlock()
	if !changed {
		return
	}
	if ok {
		n.log.Info("gossip member admitted as a peer", "member", m.Name, "gossip", m.Addr)
		return
	}
	n.metrics.admissionRefused.Inc()
	n.log.Warn("refusing gossip member: it is not a peer; it counts nowhere (no raft membership, no host, no vote on settings or bootstrap)",
		"member", m.Name, "gossip", m.Addr, "raft", m.Meta.RaftAddr, "why", why)
}

// sameHost reports whether two host:port addresses are on one IP address
// (addresses that are not IP:port, as in-memory ones, are not compared).
func sameHost(a, b string) bool {
	ha, _, errA := net.SplitHostPort(a)
	hb, _, errB := net.SplitHostPort(b)
	ia, ib := net.ParseIP(ha), net.ParseIP(hb)
	if errA != nil || errB != nil || ia == nil || ib == nil {
		return true
	}
	return ia.Equal(ib)
}
