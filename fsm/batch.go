package fsm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxCreateBatch bounds the servers one CreateServers entry carries.
const MaxCreateBatch = 128

// CreateServers is several new servers decided together by the leader and
// committed in one entry. Each applies as its own CreateServer would, in
// order, at the entry's time, and gets its own answer: one refused (a
// stale claim, a duplicate id) refuses nothing else. The entry as a whole
// never fails.
type CreateServers struct {
	Meta
	Servers []CreateServer `json:"servers"`
}

// Type implements Command.
func (*CreateServers) Type() CommandType { return CmdCreateServers }

// BatchResult is the value of a CreateServers entry: one Result per
// server, in the entry's order.
type BatchResult []Result

func init() {
	register[CreateServers](CmdCreateServers, "CreateServers", applyCreateServers)
}

func applyCreateServers(st *state, c *CreateServers) (any, error) {
	if len(c.Servers) == 0 || len(c.Servers) > MaxCreateBatch {
		return nil, fmt.Errorf("%w: a CreateServers entry carries 1 to %d servers, got %d", ErrInvalid, MaxCreateBatch, len(c.Servers))
	}
	out := make(BatchResult, len(c.Servers))
	for i := range c.Servers {
		sub := c.Servers[i]
		sub.At = c.At
		v, err := applyCreateServer(st, &sub)
		out[i] = Result{Value: v, Err: err}
	}
	return out, nil
}

// pendingCreate is a CreateServer waiting in the leader's batch queue.
type pendingCreate struct {
	ctx     context.Context
	c       *CreateServer
	arrived uint64 // s.refreshes when it arrived
	done    chan decided
}

type decided struct {
	idx uint64
	err error
}

// decideBatched is Decide for a new server when the leader may batch
// (l.CommitBatch set): the request joins a queue, and whichever waiting
// request holds the decision lock decides everything queued at once and
// commits it as one CreateServers entry. The rules of Decide hold for
// every server of the batch: each decision sees every earlier one (those
// applied, and those of the same batch, as pending claims), a server whose
// decision turned stale when its entry applied is decided again in the
// next batch, and the node mirror is refreshed once before a server is
// answered "No valid host".
func (s *Store) decideBatched(ctx context.Context, c *CreateServer, l Leader) (uint64, error) {
	w := &pendingCreate{ctx: ctx, c: c, arrived: s.refreshes.Load(), done: make(chan decided, 1)}
	s.queueMu.Lock()
	s.queue = append(s.queue, w)
	s.queueMu.Unlock()

	s.decideMu.Lock()
	defer s.decideMu.Unlock()
	for {
		select {
		case d := <-w.done:
			return d.idx, d.err
		default:
		}
		// Ours is still queued (or queued again after a stale decision):
		// decide the queue, ours among it.
		s.queueMu.Lock()
		batch := s.queue
		if len(batch) > MaxCreateBatch {
			batch = batch[:MaxCreateBatch]
		}
		s.queue = s.queue[len(batch):]
		s.queueMu.Unlock()
		if len(batch) == 0 {
			// Unreachable while w is unanswered: it was queued, and only a
			// holder of decideMu takes from the queue and answers.
			return 0, errors.New("fsm: a queued decision was lost: retry the request")
		}
		s.decideBatch(batch, l)
	}
}

// decideBatch decides and commits one batch. Every request of it is
// answered, except those whose decision turned stale: they go back to the
// front of the queue.
func (s *Store) decideBatch(batch []*pendingCreate, l Leader) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.done <- decided{err: fmt.Errorf("the request ended before the leader decided it, nothing was created: %w", err)}
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	refreshed := false
	for {
		pending := newPendingClaims(len(live))
		starved := false
		s.mu.RLock()
		for _, w := range live {
			w.c.reset()
			if len(l.Avoid) > 0 {
				w.c.avoid(l.Avoid)
			}
			scheduleWith(s.st, w.c, pending)
			pending.add(w.c)
			if w.c.starved && w.arrived == s.refreshes.Load() {
				starved = true
			}
		}
		s.mu.RUnlock()
		if !starved || refreshed || l.RefreshNodes == nil {
			break
		}
		// No node fits one of them: nodes may have been enrolled since the
		// last sync. Refresh once and decide the whole batch again.
		refreshed = true
		ctx, cancel := batchContext(live)
		err := l.RefreshNodes(ctx)
		cancel()
		s.refreshes.Add(1)
		_ = err // a failed refresh leaves the mirror as it was: decide without it
	}

	entry := &CreateServers{Servers: make([]CreateServer, len(live))}
	for i, w := range live {
		entry.Servers[i] = *w.c
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	idx, v, err := l.CommitBatch(ctx, entry)
	if err != nil {
		for _, w := range live {
			w.done <- decided{idx: idx, err: err}
		}
		return
	}
	res, ok := v.(BatchResult)
	if !ok || len(res) != len(live) {
		err := fmt.Errorf("fsm: a CreateServers entry at index %d answered %T for %d servers: check the log of this peer", idx, v, len(live))
		for _, w := range live {
			w.done <- decided{idx: idx, err: err}
		}
		return
	}
	var again []*pendingCreate
	for i, w := range live {
		if errors.Is(res[i].Err, ErrStaleDecision) && w.ctx.Err() == nil {
			again = append(again, w)
			continue
		}
		if errors.Is(res[i].Err, ErrStaleDecision) {
			w.done <- decided{idx: idx, err: fmt.Errorf("the leader's decisions kept being overtaken by other entries; "+
				"gave up at the request's deadline, nothing was created: retry the request: %w", w.ctx.Err())}
			continue
		}
		w.done <- decided{idx: idx, err: res[i].Err}
	}
	if len(again) > 0 {
		s.queueMu.Lock()
		s.queue = append(again, s.queue...)
		s.queueMu.Unlock()
	}
}

// batchContext is the context a batch is committed under: it ends at the
// latest deadline among its requests (a request whose own deadline passes
// meanwhile is still answered with the outcome of the entry), and is not
// cancelled by any one of them.
func batchContext(batch []*pendingCreate) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, w := range batch {
		dl, ok := w.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	if latest.IsZero() {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), latest)
}
