package fsm

import (
	"fmt"
	"slices"

	"github.com/corral-dev/corral/fsm/sched"
)

// SetHostDrain drains a host (no new servers; the leader moves its servers
// away) or undrains it.
type SetHostDrain struct {
	Meta
	Name    string `json:"name"`
	Drained bool   `json:"drained"`
	// Reason is the operator's reason for draining (Nova's disabled_reason);
	// ignored when undraining, which clears it.
	Reason string `json:"reason,omitempty"`
}

// Type implements Command.
func (*SetHostDrain) Type() CommandType { return CmdSetHostDrain }

// Move gives one server a new owner. FromHost and FromEpoch are the owner
// the move was planned against: if the server has changed hands since,
// the whole plan is rejected and the leader plans again.
type Move struct {
	ServerID  string `json:"server_id"`
	FromHost  string `json:"from_host"`
	FromEpoch uint64 `json:"from_epoch"`
	ToHost    string `json:"to_host"`
}

// Reasons for a change of owner.
const (
	ReasonHostDown  = "host down"
	ReasonDrain     = "host drained"
	ReasonAdminMove = "moved by an operator"
)

// ReassignServers commits a whole reassignment plan as one entry. With
// From set and no Moves, the leader plans (sched.Reassign) every live
// server of From onto the up, undrained hosts of its kind before
// proposing. Every moved server's owner epoch grows by one.
type ReassignServers struct {
	Meta
	From   string `json:"from,omitempty"`
	Reason string `json:"reason"`
	Moves  []Move `json:"moves"`
	// Avoid are hosts the plan must not use (dead to gossip, not yet down).
	Avoid []string `json:"avoid,omitempty"`
}

// Type implements Command.
func (*ReassignServers) Type() CommandType { return CmdReassignServers }

func init() {
	register[SetHostDrain](CmdSetHostDrain, "SetHostDrain", applySetHostDrain)
	register[ReassignServers](CmdReassignServers, "ReassignServers", applyReassignServers)
}

func applySetHostDrain(st *state, c *SetHostDrain) (any, error) {
	h, ok := st.hosts[c.Name]
	if !ok {
		return nil, errHostNotFound(c.Name)
	}
	reason := ""
	if c.Drained {
		reason = c.Reason
	}
	if c.Bounded {
		if err := checkReason("drain reason", reason); err != nil {
			return nil, err
		}
	}
	if h.Drained != c.Drained || h.DrainReason != reason {
		h.Drained, h.DrainReason = c.Drained, reason
		h.ChangedAt = c.At.UTC()
		st.hosts[h.Name] = h
	}
	return h, nil
}

// PlanReassign returns the moves that would take every live server of
// host onto the other up, undrained hosts of its kind: the same function
// the leader commits with, for dry runs.
func PlanReassign(st *state, host string, avoid ...string) []Move {
	if st.hosts[host].Kind == KindHypervisor {
		return nil // VMs live on their hypervisor's resources: they cannot move to another host
	}
	var ids []string
	epochs := map[string]uint64{}
	st.eachOwned(host, func(id string) {
		ids = append(ids, id)
		epochs[id] = st.servers[id].Epoch
	})
	if len(ids) == 0 {
		return nil
	}
	var cands []sched.Candidate
	for _, c := range placementCandidates(st, KindIronic, avoid...) {
		if c.Name != host {
			cands = append(cands, c)
		}
	}
	var moves []Move
	for _, a := range reassign(st, ids, cands) {
		moves = append(moves, Move{ServerID: a.ServerID, FromHost: host, FromEpoch: epochs[a.ServerID], ToHost: a.Host})
	}
	return moves
}

// reassign plans the moves of servers, keeping to their groups'
// policies where the hosts allow (sched.ReassignGroups): the members of a
// group that stay where they are count on their hosts.
func reassign(st *state, ids []string, cands []sched.Candidate) []sched.Assignment {
	groups := map[string]*sched.Group{}
	byGroup := map[string]*sched.Group{}
	moving := map[string]bool{}
	for _, id := range ids {
		moving[id] = true
	}
	for _, id := range ids {
		gid := st.groupOf[id]
		if gid == "" {
			continue
		}
		g := byGroup[gid]
		if g == nil {
			g = schedGroup(st, gid, "")
			for _, m := range st.groups[gid].Members {
				if s, ok := st.servers[m]; ok && moving[m] && s.Live() && s.Host != "" {
					g.Members[s.Host]-- // it moves: it no longer counts where it was
				}
			}
			byGroup[gid] = g
		}
		groups[id] = g
	}
	if len(groups) == 0 {
		return sched.Reassign(ids, cands)
	}
	return sched.ReassignGroups(ids, cands, groups)
}

// decided plans the moves of From's servers (leader only, before
// proposing); the moves an operator named get the owner and epoch they
// move from.
func (c *ReassignServers) decided(st *state, avoid []string) (Command, []bool) {
	d := *c
	d.Avoid = avoiding(c.Avoid, avoid)
	if c.From != "" {
		d.Moves = PlanReassign(st, d.From, d.Avoid...)
		return &d, []bool{false}
	}
	d.Moves = slices.Clone(c.Moves)
	for i, m := range d.Moves {
		if s, ok := st.servers[m.ServerID]; ok && m.FromHost == "" {
			d.Moves[i].FromHost, d.Moves[i].FromEpoch = s.Host, s.Epoch
		}
	}
	return &d, []bool{false}
}

func applyReassignServers(st *state, c *ReassignServers) (any, error) {
	seen := map[string]bool{}
	for _, m := range c.Moves {
		s, ok := st.servers[m.ServerID]
		if !ok || !s.Live() {
			return nil, fmt.Errorf("%w: server %s in the plan does not exist (or is deleted)", ErrConflict, m.ServerID)
		}
		if seen[m.ServerID] {
			return nil, fmt.Errorf("%w: server %s appears twice in the plan", ErrInvalid, m.ServerID)
		}
		seen[m.ServerID] = true
		if err := fence(s, m.FromHost, m.FromEpoch); err != nil {
			return nil, err
		}
		h, ok := st.hosts[m.ToHost]
		if !ok || h.Status != HostUp || h.Drained || h.Kind != KindIronic {
			return nil, fmt.Errorf("%w: host %s cannot take server %s: it must be an up, undrained %s host", ErrConflict, m.ToHost, m.ServerID, KindIronic)
		}
		if m.ToHost == s.Host {
			return nil, fmt.Errorf("%w: server %s is already owned by %s", ErrConflict, m.ServerID, m.ToHost)
		}
	}
	at := c.At.UTC()
	for _, m := range c.Moves {
		s := st.servers[m.ServerID]
		s.OwnerReason = fmt.Sprintf("%s: from %s at epoch %d", c.Reason, s.Host, s.Epoch)
		s.Host, s.Epoch, s.EpochIndex, s.OwnerSince = m.ToHost, s.Epoch+1, st.index, at
		s.UpdatedAt = at
		st.putServer(s)
	}
	return len(c.Moves), nil
}

// PlanReassign returns, without changing anything, the moves that would
// take host's live servers elsewhere now (a dry run of a death or drain).
func (s *Store) PlanReassign(host string, avoid ...string) []Move {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return PlanReassign(s.st, host, avoid...)
}
