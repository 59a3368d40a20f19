package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/fsm"
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
	for {
		err := n.raft.Barrier(n.cfg.Raft.ApplyTimeout).Error()
		if err == nil {
			break
		}
		n.log.Warn("leader barrier failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	n.readyTerm.Store(term)
	since := time.Now()
	n.log.Info("leader ready", "term", term)
	tick := time.NewTicker(n.cfg.ReconcileInterval)
	defer tick.Stop()
	for {
		if err := n.reconcile(ctx, since); err != nil && ctx.Err() == nil {
			n.metrics.reconcileErrs.Inc()
			n.log.Warn("leader reconcile failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-n.gossip.events:
		}
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

func (n *Node) reconcile(ctx context.Context, leaderSince time.Time) error {
	members := n.gossip.snapshot()
	var errs []error
	if err := n.reconcileRaft(members); err != nil {
		errs = append(errs, err)
	}
	if err := n.reconcileHosts(ctx, members, leaderSince); err != nil {
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

// reconcileHosts keeps the FSM's host list in step with gossip: live
// members are registered and up, dead members are down, departed ones left.
// A host the leader has never heard of in gossip is marked down only after
// DeadGrace, so a new leader does not judge peers before gossip converged.
func (n *Node) reconcileHosts(ctx context.Context, members []memberState, leaderSince time.Time) error {
	var errs []error
	seen := map[string]bool{}
	for _, m := range members {
		seen[m.Name] = true
		h, err := n.store.Host(m.Name)
		known := err == nil
		var cmd fsm.Command
		switch m.Status {
		case MemberAlive:
			if m.Meta.RaftAddr == "" {
				continue
			}
			if !known || h.Status != fsm.HostUp || h.RaftAddr != m.Meta.RaftAddr ||
				h.APIAddr != m.Meta.APIAddr || h.GossipAddr != m.Addr || h.Kind != m.Meta.Kind {
				cmd = &fsm.RegisterHost{Name: m.Name, RaftAddr: m.Meta.RaftAddr, APIAddr: m.Meta.APIAddr,
					GossipAddr: m.Addr, Kind: m.Meta.Kind}
			}
		case MemberDead:
			if known && h.Status == fsm.HostUp {
				cmd = &fsm.SetHostStatus{Name: m.Name, Status: fsm.HostDown}
			}
		case MemberLeft:
			if known && h.Status != fsm.HostLeft {
				cmd = &fsm.SetHostStatus{Name: m.Name, Status: fsm.HostLeft}
			}
		}
		if cmd == nil {
			continue
		}
		n.log.Info("updating host from gossip", "host", m.Name, "gossip_status", m.Status, "command", cmd.Type().String())
		if _, err := n.applyLocal(ctx, cmd); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", m.Name, err))
		}
	}
	if time.Since(leaderSince) >= n.cfg.DeadGrace {
		for _, h := range n.store.Hosts() {
			if seen[h.Name] || h.Status != fsm.HostUp {
				continue
			}
			n.log.Warn("host unknown to gossip since this peer became leader; marking it down", "host", h.Name)
			if _, err := n.applyLocal(ctx, &fsm.SetHostStatus{Name: h.Name, Status: fsm.HostDown}); err != nil {
				errs = append(errs, fmt.Errorf("host %s: %w", h.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
