package cluster

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// admissionRecheck is how long a refused member waits before the leader
// checks its certificate again.
const admissionRecheck = 10 * time.Second

// admission is the leader's gate between gossip and raft: with TLS on, a
// live gossip member becomes a raft member and a host only once this peer
// has completed a mutual-TLS handshake with its raft address, which
// proves that it holds a certificate from the cluster's CA. (With gossip
// encryption, memberlist itself drops members without the key; without
// TLS every member that gossip shows is admitted.)
type admission struct {
	dial func(addr raft.ServerAddress, timeout time.Duration) error

	mu      sync.Mutex
	checked map[string]admitted // member name → last check
}

type admitted struct {
	addr string
	ok   bool
	at   time.Time
}

func newAdmission(n *Node) *admission {
	a := &admission{checked: map[string]admitted{}}
	if n.cfg.TLS != nil && n.cfg.Transport == nil {
		st := &tlsStream{client: func(host string) *tls.Config { return n.cfg.TLS.PeerClient(host, true) }}
		a.dial = func(addr raft.ServerAddress, timeout time.Duration) error {
			c, err := st.Dial(addr, timeout)
			if err != nil {
				return err
			}
			return c.Close()
		}
	}
	return a
}

// filter returns the members that may take part: every member that is not
// alive (it was admitted while alive, or it is ignored), and the alive
// ones that pass the TLS check or are already in the raft configuration.
func (n *Node) admitted(ctx context.Context, members []memberState, inRaft map[raft.ServerID]raft.Server) []memberState {
	a := n.admit
	if a.dial == nil {
		return members
	}
	out := members[:0:0]
	for _, m := range members {
		if m.Status != MemberAlive || m.Name == n.cfg.Name {
			out = append(out, m)
			continue
		}
		if s, ok := inRaft[raft.ServerID(m.Name)]; ok && string(s.Address) == m.Meta.RaftAddr {
			out = append(out, m)
			continue
		}
		if a.check(ctx, n, m) {
			out = append(out, m)
		}
	}
	return out
}

func (a *admission) check(ctx context.Context, n *Node, m memberState) bool {
	a.mu.Lock()
	prev, seen := a.checked[m.Name]
	a.mu.Unlock()
	if seen && prev.addr == m.Meta.RaftAddr && (prev.ok || time.Since(prev.at) < admissionRecheck) {
		return prev.ok
	}
	if m.Meta.RaftAddr == "" || ctx.Err() != nil {
		return false
	}
	err := a.dial(raft.ServerAddress(m.Meta.RaftAddr), 2*time.Second)
	a.mu.Lock()
	a.checked[m.Name] = admitted{addr: m.Meta.RaftAddr, ok: err == nil, at: time.Now()}
	a.mu.Unlock()
	if err != nil {
		n.metrics.admissionRefused.Inc()
		if !seen || prev.ok || prev.addr != m.Meta.RaftAddr {
			n.log.Warn("refusing gossip member: it has no certificate from this cluster's CA; it gets no raft membership and no host",
				"member", m.Name, "raft", m.Meta.RaftAddr, "err", err)
		}
		return false
	}
	n.log.Info("gossip member admitted: its certificate is from this cluster's CA", "member", m.Name)
	return true
}
