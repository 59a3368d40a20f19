package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/corral-dev/corral/fsm"
)

// The leader's decisions. A command that carries one — the owner and
// claim of a new server, a reassignment plan, the owner of an adopted
// server — is scheduled by fsm (Store.Schedule, a pure read of the state)
// and committed here under three rules:
//
//   - One at a time. The decider holds its lock from scheduling until the
//     entry is applied, so every decision sees the previous ones applied.
//   - Decided again until it holds. Entries without decisions still apply
//     between a decision and its entry; when one of them took what the
//     decision chose, Apply answers fsm.ErrStaleDecision and the command
//     is scheduled again on the state that now includes it, until the
//     decision holds, nothing fits (a new server is then recorded in
//     ERROR, "No valid host", as Nova does), or the request's context
//     ends. A stale decision never reaches the caller.
//   - The mirror is refreshed before giving up. When no resource provider
//     at all fits a new server, the node mirror is synced once (nodes may
//     have been enrolled since the last sync) and the server decided
//     again. Requests waiting meanwhile do not refresh again: they decide
//     on the refreshed mirror.
//
// New servers that arrive together are decided together and committed in
// one fsm.CreateServers entry (decide_batch.go), under the same rules.
//
// The decider lives in package cluster rather than a package of its own
// because everything it drives is the peer's: it commits through this
// peer's raft, refreshes through its node sync and counts in its metrics.
// In a package of its own those would come back to it as callbacks into
// cluster, the climb from the lower layer up that this layout removes:
// the create path reads top-down, api → Node.Propose → decider → fsm
// (Schedule, then Apply through raft).
type decider struct {
	sched scheduler
	log   decisionLog

	mu        sync.Mutex    // one decision at a time, held until its entry applied
	refreshes atomic.Uint64 // node mirror refreshes run for decisions

	queueMu sync.Mutex
	queue   []*pendingCreate // new servers waiting for a batched decision
}

// scheduler takes the leader's decisions for a command (fsm.Store).
type scheduler interface {
	Schedule(c fsm.Command, avoid []string) (fsm.Decision, bool)
}

// decisionLog is where decisions go (the Node; a fake in tests).
type decisionLog interface {
	// commit stamps c, commits it through the log and returns once this
	// peer applied it, with the entry's value and Apply's business error.
	commit(ctx context.Context, c fsm.Command) (uint64, any, error)
	// refreshNodes brings the Ironic node mirror up to date with one sync
	// pass (committing what changed through the log).
	refreshNodes(ctx context.Context) error
}

func newDecider(s scheduler, l decisionLog) *decider { return &decider{sched: s, log: l} }

// decide commits c, taking its decisions first when it carries any,
// avoiding the hosts in avoid. With batch, a new server may be decided
// with others in one fsm.CreateServers entry: only once every peer that
// applies the log knows that entry. It returns the entry's index and
// value.
func (d *decider) decide(ctx context.Context, c fsm.Command, avoid []string, batch bool) (uint64, any, error) {
	if !fsm.Decides(c) {
		return d.log.commit(ctx, c)
	}
	if cs, ok := c.(*fsm.CreateServer); ok && batch {
		idx, err := d.decideBatched(ctx, cs, avoid)
		return idx, nil, err
	}
	if cs, ok := c.(*fsm.CreateServerSets); ok && len(cs.Sets) == 1 {
		// A boot request is always batched: its answer is the request's
		// result, which an entry of several requests carries per request.
		set := cs.Sets[0]
		if set.Server.RequestID == "" {
			set.Server.RequestID = cs.RequestID // the servers keep the request's id
		}
		idx, err := d.decideSetBatched(ctx, &set, avoid)
		return idx, nil, err
	}
	arrived := d.refreshes.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	refreshed := false
	for attempt := 1; ; attempt++ {
		dec, _ := d.sched.Schedule(c, avoid)
		if dec.NoCandidate[0] && !refreshed {
			refreshed = true
			if d.refreshes.Load() == arrived {
				err := d.log.refreshNodes(ctx)
				d.refreshes.Add(1)
				if err != nil && ctx.Err() != nil {
					return 0, nil, fmt.Errorf("refreshing the Ironic node mirror before answering \"No valid host\": %w", err)
				}
				// A failed refresh leaves the mirror as it was: the decision
				// below is the one without it.
			}
			continue
		}
		idx, v, err := d.log.commit(ctx, dec.Command)
		if !errors.Is(err, fsm.ErrStaleDecision) {
			return idx, v, err
		}
		if ctx.Err() != nil {
			return idx, v, fmt.Errorf("the leader decided %d times and an entry committed in between overtook each decision; "+
				"gave up at the request's deadline, nothing was created: retry the request: %w", attempt, ctx.Err())
		}
	}
}
