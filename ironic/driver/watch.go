package driver

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// Waiting modes ([ironic] deploy_wait).
const (
	// WaitWatch parks a server whose node is deploying or undeploying and
	// lets the host's one watcher learn where all such nodes stand with a
	// listing per provision state per interval: the default.
	WaitWatch = "watch"
	// WaitPoll holds a worker for the whole deploy while it polls the one
	// node every PollInterval of the client: a host then builds at most
	// [ironic] workers servers at once. Kept to measure against.
	WaitPoll = "poll"
)

// awaitKind is what a parked server waits for its node to do.
type awaitKind int

const (
	awaitDeployed  awaitKind = iota // active (a build)
	awaitAvailable                  // available (a delete's undeploy)
	awaitSettled                    // out of deploying (a delete that found a deploy in progress)
)

// entry is one server parked on its node.
type entry struct {
	h        *compute.Handle
	s        fsm.Server
	node     string
	kind     awaitKind
	since    time.Time
	deadline time.Time
	last     string // provision state last seen
}

// result is what the watcher learned of a finished deploy, kept until the
// server's next build step takes it.
type result struct {
	epoch uint64
	node  string
	err   error // a compute.PermanentError, or nil: the node is active for the server
	at    time.Time
}

// watcher is a host's one waiter for Ironic's long operations.
type watcher struct {
	d       *Driver
	mu      sync.Mutex
	entries map[string]*entry // by server id
	results map[string]result // by server id
	added   chan struct{}
	// expected is a moving average of how long deploys took; the interval
	// between rounds is a tenth of it.
	expected time.Duration
	listed   map[string]int // provision state → nodes its last listing returned
}

func newWatcher(d *Driver) *watcher {
	return &watcher{d: d, entries: map[string]*entry{}, results: map[string]result{},
		added: make(chan struct{}, 1), listed: map[string]int{}}
}

// await parks s on node until it reaches what kind waits for, and returns
// the error the driver hands back to the manager. last is the provision
// state the node was last seen in.
func (d *Driver) await(h *compute.Handle, s fsm.Server, node string, kind awaitKind, last string) error {
	err := h.Await(s)
	now := time.Now()
	w := d.w
	w.mu.Lock()
	w.entries[s.ID] = &entry{h: h, s: s, node: node, kind: kind, since: now, deadline: now.Add(d.cfg.DeployTimeout), last: last}
	delete(w.results, s.ID)
	w.mu.Unlock()
	select {
	case w.added <- struct{}{}:
	default:
	}
	return err
}

// take returns, once, what the watcher learned of s's deploy at its
// epoch on its node.
func (w *watcher) take(s fsm.Server) (result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.results[s.ID]
	if !ok {
		return r, false
	}
	delete(w.results, s.ID)
	return r, r.epoch == s.Epoch && r.node == s.NodeUUID
}

// Run is the host's watcher: it implements compute.Runner, so the
// manager runs it beside its workers.
func (d *Driver) Run(ctx context.Context) {
	w := d.w
	for {
		wait, busy := w.interval(time.Now())
		if !busy {
			select {
			case <-ctx.Done():
				return
			case <-w.added:
				continue
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		select { // what was added meanwhile is in this round
		case <-w.added:
		default:
		}
		w.round(ctx, time.Now())
	}
}

// interval is the time to the next round: a tenth of how long deploys
// take (the moving average, or before any deploy ended here the age of
// the oldest wait, so the checks spread out geometrically), within
// [MinPoll, MaxPoll], and never past the nearest deadline. Once deploys
// have ended here, rounds also come when the next wait is due to end
// (its start plus the average), and while a wait is past due they come
// four times as often, so the end of a deploy is seen within a fortieth
// of the deploy time when it ends on time.
func (w *watcher) interval(now time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.entries) == 0 {
		return 0, false
	}
	base := w.expected
	var nearest time.Time
	for _, e := range w.entries {
		if age := now.Sub(e.since); w.expected == 0 && age > base {
			base = age
		}
		if nearest.IsZero() || e.deadline.Before(nearest) {
			nearest = e.deadline
		}
	}
	iv := base / 10
	if w.expected > 0 {
		for _, e := range w.entries {
			due := e.since.Add(w.expected).Sub(now)
			if due <= 0 {
				iv = base / 40
				break
			}
			iv = min(iv, due)
		}
	}
	iv = min(max(iv, w.d.cfg.MinPoll), w.d.cfg.MaxPoll)
	if until := nearest.Sub(now); until < iv {
		iv = max(until, time.Millisecond)
	}
	return iv, true
}

// round learns the state of every awaited node and wakes the servers
// whose wait is over.
func (w *watcher) round(ctx context.Context, now time.Time) {
	w.mu.Lock()
	for id, r := range w.results {
		if now.Sub(r.at) > 10*time.Minute {
			delete(w.results, id) // its server moved on without it
		}
	}
	var live []*entry
	for id, e := range w.entries {
		if !e.h.Awaiting(e.s) {
			delete(w.entries, id) // the server moved, or a delete took over
			continue
		}
		live = append(live, e)
	}
	w.mu.Unlock()
	sort.Slice(live, func(i, j int) bool { return live[i].s.ID < live[j].s.ID })

	byState := map[string][]*entry{}
	for _, e := range live {
		if now.After(e.deadline) {
			w.timeout(e)
			continue
		}
		byState[e.last] = append(byState[e.last], e)
	}
	states := make([]string, 0, len(byState))
	for st := range byState {
		states = append(states, st)
	}
	sort.Strings(states)
	for _, st := range states {
		if ctx.Err() != nil {
			return
		}
		w.learn(ctx, st, byState[st])
	}
}

// learn finds where the nodes of es (all last seen in provision state st)
// stand: one listing of the nodes in st, then a GET of each node that
// left st. When fewer nodes wait than the listing would take pages, they
// are read one by one instead.
func (w *watcher) learn(ctx context.Context, st string, es []*entry) {
	moved, ok := w.list(ctx, st, es)
	if !ok {
		return
	}
	// Most nodes that left st went where their kind of wait ends (a deploy
	// to active): when many did, one listing of that state finds them.
	byNext := map[string][]*entry{}
	var rest []*entry
	for _, e := range moved {
		if next := e.kind.next(); next != "" {
			byNext[next] = append(byNext[next], e)
		} else {
			rest = append(rest, e)
		}
	}
	for _, next := range []string{ironic.StateActive, ironic.StateAvailable} {
		left, ok := w.list(ctx, next, byNext[next])
		if !ok {
			left = byNext[next]
		}
		rest = append(rest, left...)
	}
	for _, e := range rest {
		if ctx.Err() != nil {
			return
		}
		n, err := w.d.ir.GetNode(ctx, e.node)
		switch {
		case errors.Is(err, ironic.ErrNotFound):
			w.finish(e, nil, false) // the next step reads Ironic and decides
		case err != nil:
			w.d.log.Warn("reading an Ironic node being waited for failed; trying again next round",
				"server", e.s.ID, "node", e.node, "err", err)
		default:
			w.observe(e, n)
		}
	}
}

// list observes the nodes of es in one listing of the nodes in provision
// state st, when that takes fewer requests than reading each (its last
// listing's size tells the pages), and returns the entries it did not
// find there; ok is false when the listing failed.
func (w *watcher) list(ctx context.Context, st string, es []*entry) (missing []*entry, ok bool) {
	if len(es) == 0 {
		return nil, true
	}
	w.mu.Lock()
	pages := 1 + w.listed[st]/max(w.d.ir.PageSize(), 1)
	w.mu.Unlock()
	if st == "" || len(es) <= pages {
		return es, true
	}
	nodes, err := w.d.ir.ListNodesInState(ctx, st)
	if err != nil {
		w.d.log.Warn("listing the Ironic nodes in a provision state failed; trying again next round",
			"state", st, "waiting", len(es), "err", err)
		return nil, false
	}
	w.mu.Lock()
	w.listed[st] = len(nodes)
	w.mu.Unlock()
	in := make(map[string]ironic.Node, len(nodes))
	for _, n := range nodes {
		in[n.UUID] = n
	}
	for _, e := range es {
		if n, found := in[e.node]; found {
			w.observe(e, n)
		} else {
			missing = append(missing, e)
		}
	}
	return missing, true
}

// next is the provision state in which a wait of kind k ends well.
func (k awaitKind) next() string {
	switch k {
	case awaitDeployed:
		return ironic.StateActive
	case awaitAvailable:
		return ironic.StateAvailable
	}
	return ""
}

// observe applies one sighting of an awaited node.
func (w *watcher) observe(e *entry, n ironic.Node) {
	state := n.ProvisionState
	switch e.kind {
	case awaitDeployed:
		switch {
		case state == ironic.StateActive && n.TargetProvisionState == "":
			if n.InstanceUUID != "" && n.InstanceUUID != e.s.ID {
				w.finish(e, compute.Permanent("Ironic node %s is active for instance %s, not for this server", n.UUID, n.InstanceUUID), true)
				return
			}
			w.learnDuration(time.Since(e.since))
			w.finish(e, nil, true)
			return
		case state == ironic.StateDeployFailed || state == ironic.StateError:
			w.finish(e, compute.Permanent("Deploy of Ironic node %s failed: node is in provision state %q: %s", n.UUID, state, n.LastError), true)
			return
		case !inFlight(state):
			// Not deploying and not deployed (torn down by hand, say):
			// the next build step reads the node and acts.
			w.finish(e, nil, false)
			return
		}
	case awaitAvailable:
		if (state == ironic.StateAvailable && n.TargetProvisionState == "") || !inFlight(state) {
			w.finish(e, nil, false)
			return
		}
	case awaitSettled:
		if state != ironic.StateDeploying && state != ironic.StateWaitCallBack {
			w.finish(e, nil, false)
			return
		}
	}
	w.mu.Lock()
	e.last = state
	w.mu.Unlock()
}

// inFlight tells the provision states in which Ironic is still working
// towards a deploy or an undeploy.
func inFlight(state string) bool {
	switch state {
	case ironic.StateDeploying, ironic.StateWaitCallBack, "deploy wait", ironic.StateDeleting,
		ironic.StateCleaning, ironic.StateCleanWait:
		return true
	}
	return false
}

func (w *watcher) timeout(e *entry) {
	w.d.log.Warn("an Ironic node did not finish in time", "server", e.s.ID, "node", e.node,
		"after", w.d.cfg.DeployTimeout, "last_state", e.last)
	if e.kind == awaitDeployed {
		w.finish(e, compute.Permanent("Deploy of Ironic node %s did not finish within %s: last seen in provision state %q",
			e.node, w.d.cfg.DeployTimeout, e.last), true)
		return
	}
	w.finish(e, nil, false) // a delete is retried: its next step reads the node again
}

// finish ends e's wait; keep says whether the build's next step takes err
// (nil: deployed) instead of reading Ironic again.
func (w *watcher) finish(e *entry, err error, keep bool) {
	w.mu.Lock()
	if cur, ok := w.entries[e.s.ID]; ok && cur == e {
		delete(w.entries, e.s.ID)
	}
	if keep {
		w.results[e.s.ID] = result{epoch: e.s.Epoch, node: e.node, err: err, at: time.Now()}
	}
	w.mu.Unlock()
	e.h.Wake(e.s)
}

// learnDuration folds one deploy's duration into the moving average.
func (w *watcher) learnDuration(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expected == 0 {
		w.expected = d
		return
	}
	w.expected = (w.expected*7 + d) / 8
}
