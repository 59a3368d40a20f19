package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/hashicorp/raft"
)

// leadershipLoop starts the leader loop when this peer wins an election
// and stops it when it loses leadership.
func (n *Node) leadershipLoop(notify <-chan bool) {
	var stop context.CancelFunc
	done := make(chan struct{})
	close(done)
	for {
		select {
		case <-n.ctx.Done():
			if stop != nil {
				stop()
			}
			<-done
			return
		case isLeader := <-notify:
			n.metrics.leaderChanges.Inc()
			if stop != nil {
				stop()
				<-done
				stop = nil
			}
			if !isLeader {
				n.log.Info("lost raft leadership")
				continue
			}
			n.log.Info("gained raft leadership", "term", n.raft.CurrentTerm())
			var lctx context.Context
			lctx, stop = context.WithCancel(n.ctx)
			done = make(chan struct{})
			go func(d chan struct{}) {
				defer close(d)
				n.leaderLoop(lctx)
			}(done)
		}
	}
}

// leaderLoop runs while this peer leads. A barrier first makes sure every
// entry of earlier terms is applied; then the loop reconciles gossip into
// raft membership and the FSM's host list, periodically and on every
// gossip event.
func (n *Node) leaderLoop(ctx context.Context) {
	term := n.raft.CurrentTerm()
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		return struct{}{}, n.barrier(ctx)
	}, backoff.WithBackOff(backoff.NewConstantBackOff(100*time.Millisecond)), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, _ time.Duration) { n.log.Warn("leader barrier failed; retrying", "err", err) }))
	if err != nil || ctx.Err() != nil {
		return // leadership ended
	}
	n.readyTerm.Store(term)
	// Every failure timer starts afresh with this leadership: nobody is
	// judged on another leader's clock.
	lv := newLiveness()
	var ears *hearing
	if n.cfg.SilentGrace >= 0 {
		ears = newHearing(time.Now())
	}
	fo := newFailover(time.Now(), lv, ears)
	n.log.Info("leader ready", "term", term)
	go n.purgeLoop(ctx)
	if n.cfg.RefusedGrace >= 0 {
		go n.livenessLoop(ctx, lv)
	}
	if ears != nil {
		go n.hearingLoop(ctx, ears)
	}
	tick := time.NewTicker(n.cfg.ReconcileInterval)
	defer tick.Stop()
	// due fires when the earliest grace pending runs out, so that a death
	// is confirmed then, not up to a tick later.
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	for {
		if err := n.reconcile(ctx, fo); err != nil && ctx.Err() == nil {
			n.metrics.reconcileErrs.Inc()
			n.log.Warn("leader reconcile failed", "err", err)
		}
		wait := time.Hour
		if !fo.next.IsZero() {
			wait = max(time.Until(fo.next), time.Millisecond)
		}
		due.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-n.gossip.events:
		case <-lv.poke:
		case <-due.C:
		}
	}
}

// barrier waits for a raft barrier, or until ctx ends. Raft's timeout
// covers only the barrier's enqueueing, and a barrier enqueued as raft
// shuts down may never be answered: the leader loop must not wait for it
// then, or it would hold up the peer's shutdown.
func (n *Node) barrier(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- n.raft.Barrier(n.cfg.Raft.ApplyTimeout).Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// suffrage returns the voters and non-voters of the latest configuration.
func (n *Node) suffrage() (voters, nonvoters []raft.Server) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil, nil
	}
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s)
		} else {
			nonvoters = append(nonvoters, s)
		}
	}
	return voters, nonvoters
}

func (n *Node) reconcile(ctx context.Context, fo *failover) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	inRaft := map[raft.ServerID]raft.Server{}
	for _, s := range f.Configuration().Servers {
		inRaft[s.ID] = s
	}
	// Only admitted members are hosts and raft servers (admission.go).
	members := n.admitted(ctx, n.gossip.snapshot(), inRaft)
	var errs []error
	if err := n.reconcileRaft(members); err != nil {
		errs = append(errs, err)
	}
	if err := n.cleanupDeadVoters(members); err != nil {
		errs = append(errs, err)
	}
	if err := n.reconcileHosts(ctx, members, fo); err != nil {
		errs = append(errs, err)
	}
	if err := n.reconcileOwners(ctx, fo); err != nil {
		errs = append(errs, err)
	}
	if err := n.reconcileQuotaDefaults(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := n.enableFeatures(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// reconcileRaft adds live gossip members to raft (voters up to MaxVoters,
// then non-voters), promotes non-voters when a voter slot is free, and
// removes members that left.
func (n *Node) reconcileRaft(members []memberState) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	conf := f.Configuration()
	inConf := map[raft.ServerID]raft.Server{}
	voters := 0
	for _, s := range conf.Servers {
		inConf[s.ID] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	var errs []error
	timeout := n.cfg.Raft.ApplyTimeout
	for _, m := range members {
		id := raft.ServerID(m.Name)
		addr := raft.ServerAddress(m.Meta.RaftAddr)
		s, present := inConf[id]
		switch m.Status {
		case MemberLeft:
			if present && m.Name != n.cfg.Name {
				n.log.Info("removing departed peer from raft", "member", m.Name)
				if err := n.raft.RemoveServer(id, 0, timeout).Error(); err != nil {
					errs = append(errs, fmt.Errorf("remove %s from raft: %w", m.Name, err))
				}
			}
		case MemberAlive:
			if addr == "" {
				continue
			}
			switch {
			case m.Meta.CatchingUp && m.Name != n.cfg.Name && (!present || s.Address != addr || s.Suffrage == raft.Voter):
				// A peer with an empty log (new, or its data dir wiped)
				// catches up as a non-voter; a voter that lost its log is
				// demoted first (AddNonvoter leaves a voter a voter).
				n.log.Warn("peer has an empty raft log: it is a non-voter until it has caught up", "member", m.Name, "raft", addr)
				n.metrics.catchupNonvoters.Inc()
				if present && s.Suffrage == raft.Voter {
					if err := n.raft.DemoteVoter(id, 0, timeout).Error(); err != nil {
						errs = append(errs, fmt.Errorf("demote %s: %w", m.Name, err))
						continue
					}
					voters--
				}
				if !present || s.Address != addr {
					if err := n.raft.AddNonvoter(id, addr, 0, timeout).Error(); err != nil {
						errs = append(errs, fmt.Errorf("add %s as non-voter: %w", m.Name, err))
					}
				}
			case m.Meta.CatchingUp:
			case !present || s.Address != addr:
				if voters < n.cfg.MaxVoters || (present && s.Suffrage == raft.Voter) {
					n.log.Info("adding peer to raft as voter", "member", m.Name, "raft", addr)
					if err := n.raft.AddVoter(id, addr, 0, timeout).Error(); err != nil {
						errs = append(errs, fmt.Errorf("add voter %s: %w", m.Name, err))
					} else if !present {
						voters++
					}
				} else {
					n.log.Info("adding peer to raft as non-voter (voter limit reached)", "member", m.Name, "raft", addr, "max_voters", n.cfg.MaxVoters)
					if err := n.raft.AddNonvoter(id, addr, 0, timeout).Error(); err != nil {
						errs = append(errs, fmt.Errorf("add non-voter %s: %w", m.Name, err))
					}
				}
			case s.Suffrage != raft.Voter && voters < n.cfg.MaxVoters:
				n.log.Info("promoting non-voter to voter", "member", m.Name)
				if err := n.raft.AddVoter(id, addr, 0, timeout).Error(); err != nil {
					errs = append(errs, fmt.Errorf("promote %s: %w", m.Name, err))
				} else {
					voters++
				}
			}
		}
	}
	return errors.Join(errs...)
}
