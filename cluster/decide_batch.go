package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// pendingCreate is a new server, or a boot request of several (set),
// waiting in the decider's batch queue.
type pendingCreate struct {
	ctx     context.Context
	c       *fsm.CreateServer
	set     *fsm.ServerSet
	arrived uint64 // the decider's refreshes when it arrived
	done    chan decided
}

type decided struct {
	idx uint64
	err error
}

// decideBatched decides a new server when the leader may batch: the
// request joins a queue, and whichever waiting request holds the decision
// lock decides everything queued at once and commits it as one
// fsm.CreateServers entry. The rules of decide hold for every server of
// the batch: each decision sees every earlier one (those applied, and
// those of the same batch, as pending claims: fsm.Store.Schedule), a
// server whose decision turned stale when its entry applied is decided
// again in the next batch, and the node mirror is refreshed once before a
// server is answered "No valid host".
func (d *decider) decideBatched(ctx context.Context, c *fsm.CreateServer, avoid []string) (uint64, error) {
	return d.queueAndDecide(&pendingCreate{ctx: ctx, c: c, arrived: d.refreshes.Load(), done: make(chan decided, 1)}, avoid)
}

// decideSetBatched decides a boot request (fsm.ServerSet) as
// decideBatched decides a server: the requests queued together are
// committed in one fsm.CreateServerSets entry (those of single servers in
// their own fsm.CreateServers entry), at most fsm.MaxSetServers servers
// an entry.
func (d *decider) decideSetBatched(ctx context.Context, set *fsm.ServerSet, avoid []string) (uint64, error) {
	return d.queueAndDecide(&pendingCreate{ctx: ctx, set: set, arrived: d.refreshes.Load(), done: make(chan decided, 1)}, avoid)
}

func (d *decider) queueAndDecide(w *pendingCreate, avoid []string) (uint64, error) {
	d.queueMu.Lock()
	d.queue = append(d.queue, w)
	d.queueMu.Unlock()

	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		select {
		case r := <-w.done:
			return r.idx, r.err
		default:
		}
		// Ours is still queued (or queued again after a stale decision):
		// decide the queue, ours among it.
		d.queueMu.Lock()
		batch := d.queue
		if len(batch) > fsm.MaxCreateBatch {
			batch = batch[:fsm.MaxCreateBatch]
		}
		d.queue = d.queue[len(batch):]
		d.queueMu.Unlock()
		if len(batch) == 0 {
			// Unreachable while w is unanswered: it was queued, and only a
			// holder of mu takes from the queue and answers.
			return 0, errors.New("cluster: a queued decision was lost: retry the request")
		}
		d.decideBatch(batch, avoid)
	}
}

// decideBatch decides and commits one batch. Every request of it is
// answered, except those whose decision turned stale: they go back to the
// front of the queue.
func (d *decider) decideBatch(batch []*pendingCreate, avoid []string) {
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.done <- decided{err: fmt.Errorf("the request ended before the leader decided it, nothing was created: %w", err)}
			continue
		}
		live = append(live, w)
	}
	var creates []*pendingCreate
	var sets [][]*pendingCreate
	servers := 0
	for _, w := range live {
		if w.set == nil {
			creates = append(creates, w)
			continue
		}
		if n := len(w.set.Members); len(sets) == 0 || servers+n > fsm.MaxSetServers {
			sets, servers = append(sets, nil), 0
		}
		sets[len(sets)-1] = append(sets[len(sets)-1], w)
		servers += len(w.set.Members)
	}
	if len(creates) > 0 {
		d.commitBatch(creates, avoid)
	}
	for _, group := range sets {
		d.commitBatch(group, avoid)
	}
}

// batchEntry is the entry of a batch: all single servers, or all boot
// requests.
func batchEntry(live []*pendingCreate) fsm.Command {
	if live[0].set != nil {
		entry := &fsm.CreateServerSets{Sets: make([]fsm.ServerSet, len(live))}
		for i, w := range live {
			entry.Sets[i] = *w.set
		}
		return entry
	}
	entry := &fsm.CreateServers{Servers: make([]fsm.CreateServer, len(live))}
	for i, w := range live {
		entry.Servers[i] = *w.c
	}
	return entry
}

// commitBatch decides and commits the requests of one entry.
func (d *decider) commitBatch(live []*pendingCreate, avoid []string) {
	entry := batchEntry(live)
	var dec fsm.Decision
	refreshed := false
	for {
		dec, _ = d.sched.Schedule(entry, avoid)
		starved := false
		for i, w := range live {
			if dec.NoCandidate[i] && w.arrived == d.refreshes.Load() {
				starved = true
			}
		}
		if !starved || refreshed {
			break
		}
		// No node fits one of them: nodes may have been enrolled since the
		// last sync. Refresh once and decide the whole batch again.
		refreshed = true
		ctx, cancel := batchContext(live)
		err := d.log.refreshNodes(ctx)
		cancel()
		d.refreshes.Add(1)
		_ = err // a failed refresh leaves the mirror as it was: decide without it
	}

	ctx, cancel := batchContext(live)
	defer cancel()
	idx, v, err := d.log.commit(ctx, dec.Command)
	if err != nil {
		for _, w := range live {
			w.done <- decided{idx: idx, err: err}
		}
		return
	}
	res, ok := v.(fsm.BatchResult)
	if !ok || len(res) != len(live) {
		err := fmt.Errorf("cluster: a %s entry at index %d answered %T for %d requests: check the log of this peer", entry.Type(), idx, v, len(live))
		for _, w := range live {
			w.done <- decided{idx: idx, err: err}
		}
		return
	}
	var again []*pendingCreate
	for i, w := range live {
		if errors.Is(res[i].Err, fsm.ErrStaleDecision) && w.ctx.Err() == nil {
			again = append(again, w)
			continue
		}
		if errors.Is(res[i].Err, fsm.ErrStaleDecision) {
			w.done <- decided{idx: idx, err: fmt.Errorf("the leader's decisions kept being overtaken by other entries; "+
				"gave up at the request's deadline, nothing was created: retry the request: %w", w.ctx.Err())}
			continue
		}
		w.done <- decided{idx: idx, err: res[i].Err}
	}
	if len(again) > 0 {
		d.queueMu.Lock()
		d.queue = append(again, d.queue...)
		d.queueMu.Unlock()
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
