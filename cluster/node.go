package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// Node is one running peer.
type Node struct {
	cfg     Config
	log     *slog.Logger
	store   *fsm.Store
	raft    *raft.Raft
	parts   *raftParts
	gossip  *gossip
	metrics *metrics
	fwd     Forwarder
	// rpc forwards over the binary RPC to a leader that serves it,
	// rpcServer serves it on this peer's raft port (forward.go); both nil
	// when this peer does not speak it.
	rpc       *forward.RPCClient
	rpcServer *forward.Server
	admit     *admission
	keyring   *keyring // nil: gossip encryption off
	peers     *forward.Client
	gate      *voteGate // refuses votes until a peer that started empty has caught up
	// decisions takes the leader's decisions one at a time (decide.go).
	decisions *decider

	// readyTerm is the term in which this peer, as leader, committed a
	// barrier: from then on its commit index covers every earlier write.
	readyTerm atomic.Uint64
	leaving   atomic.Bool
	mirror    atomic.Pointer[MirrorSync] // the node sync a boot that found no node runs (SetMirrorSync)
	writing   atomic.Int32               // 1 + the fsm.Encoding this leader last wrote an entry in (encoding.go)

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// New validates cfg, opens the raft stores, starts raft and gossip and the
// background loops (join, bootstrap, leadership). It does not block on an
// election.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid cluster configuration: %w", err)
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("peer", cfg.Name), store: cfg.Store}
	n.decisions = newDecider(n.store, n)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	m, err := newMetrics(cfg.Registry, n)
	if err != nil {
		return nil, fmt.Errorf("register cluster metrics: %w", err)
	}
	n.metrics = m
	// With TLS the peer certificate is the peer's credential; without, the
	// peer token.
	token, tc := cfg.PeerToken, (*tls.Config)(nil)
	if cfg.TLS != nil {
		token, tc = "", cfg.TLS.ForwardClient()
	}
	n.peers = forward.NewClient(token, tc, cfg.PeerPaths.Paths)
	n.fwd = cfg.Forwarder
	if n.fwd == nil {
		n.fwd = n.peers
		if cfg.PeerPaths.Apply == "" || cfg.PeerPaths.ReadIndex == "" {
			n.log.Warn("no forwarding paths: as a follower this peer cannot pass writes or linearizable reads on to the leader; the wiring gives it the API's (api.PeerPaths)")
		}
	}

	n.admit = newAdmission(n)
	hl := newHCLogger(n.log, "raft")
	parts, err := openRaftParts(&n.cfg, m, hl)
	if err != nil {
		return nil, err
	}
	n.parts = parts
	hasState, err := raft.HasExistingState(parts.logs, parts.stable, parts.snaps)
	if err != nil {
		_ = parts.closer()
		return nil, fmt.Errorf("read raft state in %s: %w", cfg.DataDir, err)
	}
	notify := make(chan bool, 16)
	rc := raftConfig(&n.cfg, hl)
	rc.NotifyCh = notify
	n.gate = newVoteGate(n.ctx, parts.trans, !hasState, m.votesRefused.Inc)
	r, err := raft.NewRaft(rc, newRaftFSM(n.store, m), parts.logs, parts.stable, parts.snaps, n.gate)
	if err != nil {
		_ = parts.closer()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.startForwardRPC()
	if cfg.Transport == nil && cfg.RefusedGrace >= 0 {
		// A follower stands for election as soon as its leader's ports
		// refuse connections (leaderwatch.go); refused_grace "off" trusts
		// no refusal, here either.
		answer := preVoteAnswer(n.answerPreVote)
		n.gate.answer.Store(&answer)
		n.goLoop(n.leaderWatchLoop)
	}

	meta := memberMeta{
		Version:      1,
		RaftAddr:     string(parts.trans.LocalAddr()),
		APIAddr:      cfg.APIAddr,
		Kind:         cfg.Kind,
		Expect:       cfg.BootstrapExpect,
		Bootstrapped: hasState,
		Established:  hasState,
		// A peer that joins with an empty log catches up as a non-voter.
		CatchingUp: !hasState && cfg.BootstrapExpect == 0,
		Settings:   cfg.Settings,
	}
	kr, err := openKeyring(&n.cfg)
	if err != nil {
		n.stopForwardRPC()
		_ = r.Shutdown().Error()
		_ = parts.closer()
		return nil, err
	}
	n.keyring = kr
	g, err := newGossip(&n.cfg, meta, kr, n.admit.secret, n.log)
	if err != nil {
		n.stopForwardRPC()
		_ = r.Shutdown().Error()
		_ = parts.closer()
		return nil, err
	}
	n.gossip = g
	n.log.Info("peer started", "raft", meta.RaftAddr, "gossip", g.Addr(), "api", cfg.APIAddr,
		"kind", cfg.Kind, "existing_state", hasState, "bootstrap_expect", cfg.BootstrapExpect)

	n.goLoop(func() { n.leadershipLoop(notify) })
	n.goLoop(n.reconnectLoop)
	if hasState {
		n.goLoop(n.establishLoop)
	} else {
		n.goLoop(n.catchupLoop)
	}
	if len(cfg.Join) > 0 {
		n.goLoop(n.joinLoop)
	}
	if !hasState && cfg.BootstrapExpect > 0 {
		n.goLoop(n.bootstrapLoop)
	}
	return n, nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Store returns the replicated state machine of this peer.
func (n *Node) Store() *fsm.Store { return n.store }

// Name returns this peer's name.
func (n *Node) Name() string { return n.cfg.Name }

// GossipAddr returns the bound gossip address (host:port).
func (n *Node) GossipAddr() string { return n.gossip.Addr() }

// IsLeader reports whether this peer is the raft leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leave removes this peer from the cluster cleanly: it hands leadership
// over if it has it, announces its departure over gossip (the leader then
// removes it from the raft configuration and marks its host "left"), and
// waits a bounded time for that removal before shutting down.
func (n *Node) Leave(ctx context.Context) error {
	if !n.leaving.CompareAndSwap(false, true) {
		return nil
	}
	n.log.Info("leaving the cluster")
	voters, _ := n.suffrage()
	if err := n.StepDown(); err != nil {
		n.log.Warn("leadership transfer before leave failed", "err", err)
	}
	if err := n.gossip.leave(5 * time.Second); err != nil {
		n.log.Warn("gossip leave failed", "err", err)
	}
	if len(voters) > 1 || !n.inConfig() {
		deadline := time.NewTimer(5 * time.Second)
		defer deadline.Stop()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for n.inConfig() {
			select {
			case <-ctx.Done():
				break wait
			case <-deadline.C:
				n.log.Warn("leader did not confirm our removal from raft in time; shutting down anyway")
				break wait
			case <-tick.C:
			}
		}
	}
	return n.Shutdown()
}

// StepDown hands raft leadership over to another voter when this peer
// leads, so that a planned stop costs no election timeout: raft brings the
// most up-to-date voter level with the log and tells it to stand for
// election at once, and it wins before any follower's heartbeat timeout
// runs out. Call it first when stopping gracefully, while this peer still
// serves (a follower forwards to the new leader as soon as it knows it).
// It does nothing when this peer does not lead or is the only voter.
func (n *Node) StepDown() error {
	voters, _ := n.suffrage()
	if !n.IsLeader() || len(voters) < 2 {
		return nil
	}
	term := n.raft.CurrentTerm()
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		return fmt.Errorf("hand leadership over: %w", err)
	}
	_, to := n.raft.LeaderWithID()
	n.log.Info("handed raft leadership over", "to", string(to), "term", term)
	return nil
}

func (n *Node) inConfig() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.Name) {
			return true
		}
	}
	return false
}

// Shutdown stops the loops, raft and gossip, and closes the stores.
func (n *Node) Shutdown() error {
	n.stopOnce.Do(func() {
		n.cancel()
		n.stopForwardRPC()
		var errs []error
		if err := n.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("stop raft: %w", err))
		}
		if err := n.gossip.shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("stop gossip: %w", err))
		}
		n.wg.Wait()
		if err := n.parts.closer(); err != nil {
			errs = append(errs, fmt.Errorf("close raft stores: %w", err))
		}
		n.stopErr = errors.Join(errs...)
		n.log.Info("peer stopped")
	})
	return n.stopErr
}

// AgreedSetting returns the value of a cluster-wide setting when every
// live admitted peer of host kind "kind" advertises the same one (every live peer
// when kind is empty), so that a rolling change takes effect once, when
// the last peer has it, whichever peer leads meanwhile. A setting of a
// driver is agreed among the hosts that run that driver: the other hosts
// advertise a value they never use.
func (n *Node) AgreedSetting(kind, key string) (string, bool) {
	return agreedSetting(n.counted(n.gossip.snapshot()), kind, key)
}

func agreedSetting(members []memberState, kind, key string) (string, bool) {
	value, seen := "", false
	for _, m := range members {
		if m.Status != MemberAlive || kind != "" && m.Meta.Kind != kind {
			continue
		}
		v, ok := m.Meta.Settings[key]
		if !ok || seen && v != value {
			return "", false
		}
		value, seen = v, true
	}
	return value, seen
}
