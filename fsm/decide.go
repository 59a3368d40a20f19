package fsm

import (
	"context"
	"errors"
	"fmt"
)

// ErrStaleDecision is returned by Apply when a decision the leader took (a
// placement, a claim, an owner) no longer holds when its entry applies,
// because an entry committed in between (a node sync, a host going down)
// took what it chose. Store.Decide decides again; it never reaches a user.
var ErrStaleDecision = fmt.Errorf("%w: the leader's decision is stale", ErrConflict)

// leaderPrepared is implemented by commands in which the leader records a
// decision taken from the current state (such as a placement) before
// proposing, so that Apply only validates it.
type leaderPrepared interface {
	prepare(st *state)
	// reset forgets the decision, so that prepare decides again.
	reset()
}

// hostAvoider is implemented by commands whose leader decisions should
// avoid some hosts the state still shows up (gossip already sees them
// dead): the leader records the list in the command, so Apply and every
// replica see the same decision.
type hostAvoider interface {
	avoid(hosts []string)
}

// nodeStarved is implemented by commands whose decision can find no
// Ironic node: noCandidate reports that the last decision found none.
type nodeStarved interface {
	noCandidate() bool
}

// Leader is what the leader brings to Decide.
type Leader struct {
	// Avoid are the hosts gossip already sees gone while the log still
	// shows them up: decisions must not choose them.
	Avoid []string
	// Commit stamps the command, commits it through the log and returns
	// once this peer applied it, with Apply's business error.
	Commit func(ctx context.Context, c Command) (uint64, error)
	// RefreshNodes, when set, brings the Ironic node mirror up to date with
	// one sync pass (committing what changed through the log).
	RefreshNodes func(ctx context.Context) error
	// CommitBatch, when set, lets Decide batch new servers: it commits a
	// CreateServers entry like Commit and also returns the entry's value
	// (a BatchResult). Leave it nil while a peer that does not know
	// CreateServers may apply the log.
	CommitBatch func(ctx context.Context, c Command) (uint64, any, error)
}

// Decide is the leader's one entry into the state machine for a command
// it is about to commit. Most commands carry no decision and go straight
// to l.Commit. A command that does — the owner and claim of a new server,
// a reassignment plan, the owner of an adopted server — is decided here
// from the current state and committed under three rules:
//
//   - One at a time. Decide holds a lock from deciding until the entry is
//     applied, so every decision sees the previous ones applied.
//   - Decided again until it holds. Entries without decisions still apply
//     between a decision and its entry; when one of them took what the
//     decision chose, Apply answers ErrStaleDecision and Decide decides
//     again on the state that now includes it, until the decision holds,
//     nothing fits (a new server is then recorded in ERROR, "No valid
//     host", as Nova does), or ctx ends. A stale decision is never
//     returned.
//   - The mirror is refreshed before giving up. When no Ironic node fits a
//     new server, Decide runs l.RefreshNodes once (nodes may have been
//     enrolled since the last sync) and decides again. Requests waiting
//     meanwhile do not refresh again: they decide on the refreshed mirror.
//
// With l.CommitBatch set, new servers that arrive together are decided
// together and committed in one CreateServers entry (decideBatched), under
// the same rules.
func (s *Store) Decide(ctx context.Context, c Command, l Leader) (uint64, error) {
	p, ok := c.(leaderPrepared)
	if !ok {
		return l.Commit(ctx, c)
	}
	if cs, ok := c.(*CreateServer); ok && l.CommitBatch != nil {
		return s.decideBatched(ctx, cs, l)
	}
	arrived := s.refreshes.Load()
	s.decideMu.Lock()
	defer s.decideMu.Unlock()
	if a, ok := c.(hostAvoider); ok && len(l.Avoid) > 0 {
		a.avoid(l.Avoid)
	}
	refreshed := false
	for attempt := 1; ; attempt++ {
		// Every decision is this leader's, on its current state: one a
		// deposed leader left in the command is forgotten too.
		p.reset()
		s.prepare(p)
		if ns, ok := c.(nodeStarved); ok && ns.noCandidate() && l.RefreshNodes != nil && !refreshed {
			refreshed = true
			if s.refreshes.Load() == arrived {
				err := l.RefreshNodes(ctx)
				s.refreshes.Add(1)
				if err != nil && ctx.Err() != nil {
					return 0, fmt.Errorf("refreshing the Ironic node mirror before answering \"No valid host\": %w", err)
				}
				// A failed refresh leaves the mirror as it was: the decision
				// below is the one without it.
			}
			continue
		}
		idx, err := l.Commit(ctx, c)
		if !errors.Is(err, ErrStaleDecision) {
			return idx, err
		}
		if ctx.Err() != nil {
			return idx, fmt.Errorf("the leader decided %d times and an entry committed in between overtook each decision; "+
				"gave up at the request's deadline, nothing was created: retry the request: %w", attempt, ctx.Err())
		}
	}
}

// prepare records the leader's decisions in p from the current state.
func (s *Store) prepare(p leaderPrepared) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p.prepare(s.st)
}
