package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/forward"
)

// quorum is the number of voters a configuration of n voters needs.
func quorum(n int) int { return n/2 + 1 }

// cleanupDeadVoters removes from raft the voters that gossip has seen dead
// for longer than DeadServerCleanupAfter, as long as the live voters left
// still form a quorum of the smaller configuration. The promotion path of
// reconcileRaft then fills the freed voter slot with a healthy non-voter.
func (n *Node) cleanupDeadVoters(members []memberState) error {
	after := n.cfg.DeadServerCleanupAfter
	if after <= 0 {
		return nil
	}
	voters, _ := n.suffrage()
	byName := map[string]memberState{}
	for _, m := range members {
		byName[m.Name] = m
	}
	live := 0
	var dead []string
	now := time.Now()
	for _, v := range voters {
		name := string(v.ID)
		m, ok := byName[name]
		switch {
		case name == n.cfg.Name || ok && m.Status == MemberAlive:
			live++
		case ok && m.Status == MemberDead && now.Sub(m.Changed) > after:
			dead = append(dead, name)
		}
	}
	sort.Strings(dead)
	var errs []error
	count := len(voters)
	for _, name := range dead {
		if live < quorum(count-1) {
			n.log.Warn("not removing dead voter: the live voters left would not form a quorum", "member", name,
				"voters", count, "live", live)
			break
		}
		n.log.Warn("removing dead voter from raft", "member", name, "dead_for", now.Sub(byName[name].Changed).Round(time.Second),
			"dead_server_cleanup_after", after)
		if err := n.raft.RemoveServer(raft.ServerID(name), 0, n.cfg.Raft.ApplyTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("remove dead voter %s: %w", name, err))
			continue
		}
		n.metrics.deadVotersRemoved.Inc()
		count--
	}
	return errors.Join(errs...)
}

// RemovePeer removes a server from the raft configuration (`corral
// operator raft remove-peer`). On a follower it asks the leader.
func (n *Node) RemovePeer(ctx context.Context, name string) error {
	if m, ok := n.admittedMember(name); ok && m.Status == MemberAlive {
		return fmt.Errorf("remove %s: %w", name, ErrPeerAlive)
	}
	if !n.IsLeader() {
		api, err := n.leaderAPI()
		if err != nil {
			return err
		}
		// The leader's peers' endpoint (Config.PeerPaths): the user was
		// authorized here.
		if n.cfg.PeerPaths.RemovePeer == "" {
			return fmt.Errorf("remove %s: this peer has no path to pass the removal on to the leader", name)
		}
		err = n.CallPeer(ctx, api, http.MethodPost, n.cfg.PeerPaths.RemovePeer, map[string]string{"name": name}, nil)
		// The leader's refusals are this peer's: the same sentinels, so
		// that the operator gets the leader's answer (404, 409), not a
		// failure of the relay.
		var pe *forward.PeerError
		if errors.As(err, &pe) {
			switch pe.Status {
			case http.StatusNotFound:
				return fmt.Errorf("remove %s: %w", name, ErrUnknownPeer)
			case http.StatusConflict:
				return fmt.Errorf("remove %s: %w", name, ErrPeerAlive)
			case http.StatusServiceUnavailable:
				return fmt.Errorf("remove %s: %w (%s)", name, ErrNoLeader, pe.Message)
			}
		}
		return err
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	found := false
	for _, s := range f.Configuration().Servers {
		found = found || string(s.ID) == name
	}
	if !found {
		return fmt.Errorf("remove %s: %w", name, ErrUnknownPeer)
	}
	n.log.Warn("removing raft server on operator request", "member", name)
	if err := n.raft.RemoveServer(raft.ServerID(name), 0, n.cfg.Raft.ApplyTimeout).Error(); err != nil {
		return fmt.Errorf("remove %s from raft: %w", name, err)
	}
	return nil
}
