package cluster

import (
	"errors"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/raft"
)

// joinLoop contacts the --join addresses until one answers, then keeps
// quiet: memberlist takes over from there.
func (n *Node) joinLoop() {
	// Every peer may list all peers, itself included: contacting itself
	// would count as a successful join and leave it alone.
	var addrs []string
	for _, a := range n.cfg.Join {
		if a != n.gossip.Addr() {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return
	}
	attempt := 0
	k, err := backoff.Retry(n.ctx, func() (int, error) {
		attempt++
		k, err := n.gossip.join(addrs)
		if err != nil && k == 0 {
			return 0, err
		}
		return k, nil
	}, backoff.WithBackOff(joinBackOff()), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, _ time.Duration) {
		if attempt == 1 || attempt%10 == 0 {
			n.log.Warn("cannot join gossip yet; retrying", "join", addrs, "attempt", attempt, "err", err)
		}
	}))
	if err == nil {
		n.log.Info("joined gossip", "contacted", k, "via", addrs)
	}
}

// joinBackOff is the wait between attempts to join gossip: 200 ms,
// doubling up to 3.2 s, until this peer stops.
func joinBackOff() backoff.BackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 200 * time.Millisecond, Multiplier: 2, MaxInterval: 3200 * time.Millisecond}
}

// bootstrapLoop implements --bootstrap-expect like Consul and Nomad: when
// gossip shows exactly N peers that all expect N and none of them already
// has raft state, every one of them bootstraps raft with the same
// configuration (identical configurations make this safe). A peer that
// sees an already bootstrapped peer waits for the leader to add it instead.
func (n *Node) bootstrapLoop() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		if n.configured() {
			n.gossip.setBootstrapped()
			return
		}
		var alive []memberState
		for _, m := range n.gossip.snapshot() {
			if m.Status == MemberAlive && m.Meta.RaftAddr != "" {
				alive = append(alive, m)
			}
		}
		// Only admitted peers count (admission.go): a stranger neither
		// makes up the number nor blocks it.
		var peers []memberState
		existing := false
		mismatch := false
		for _, m := range n.admitted(n.ctx, alive, nil) {
			if m.Meta.Bootstrapped {
				existing = true
			}
			if m.Meta.Expect != 0 && m.Meta.Expect != n.cfg.BootstrapExpect {
				mismatch = true
			}
			peers = append(peers, m)
		}
		if existing {
			continue // an existing cluster will add us
		}
		if mismatch {
			if !warned {
				n.log.Error("peers disagree on bootstrap-expect; not bootstrapping: give every peer the same --bootstrap-expect")
				warned = true
			}
			continue
		}
		if len(peers) < n.cfg.BootstrapExpect {
			continue
		}
		if len(peers) > n.cfg.BootstrapExpect {
			if !warned {
				n.log.Warn("more peers than bootstrap-expect are alive and none is bootstrapped; waiting",
					"alive", len(peers), "expect", n.cfg.BootstrapExpect)
				warned = true
			}
			continue
		}
		var conf raft.Configuration
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{
				Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.Meta.RaftAddr),
			})
		}
		err := n.raft.BootstrapCluster(conf).Error()
		switch {
		case err == nil:
			n.log.Info("bootstrapped raft", "peers", len(peers))
			n.gate.open() // every peer of a new cluster starts with an empty log
		case errors.Is(err, raft.ErrCantBootstrap):
			n.log.Info("raft already has state; not bootstrapping")
		default:
			n.log.Error("raft bootstrap failed", "err", err)
			continue
		}
		n.gossip.setBootstrapped()
		return
	}
}

// configured reports whether this peer has a raft configuration with at
// least one server (bootstrapped, or added by a leader).
func (n *Node) configured() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return len(f.Configuration().Servers) > 0
}
