// Package compute runs a host's share of the servers: it watches the
// replicated state for servers this host owns that need work, and drives
// each through its virt driver (Ironic for bare metal, a VM driver for
// hypervisors), with the fencing every driver shares: intents and outcomes
// are committed at the owner epoch, and a worker stops the moment the log
// gives its server to another owner or epoch. Workers take only the short
// steps: a driver whose backend works for minutes (a bare-metal deploy)
// parks the server (Handle.Await) and wakes it when the backend is done,
// so the number of workers bounds the requests in progress, not the
// servers being built.
//
// It declares what it needs of the cluster (Cluster) and of a driver
// (Virt); it never imports api, cluster, ironic or gophercloud.
package compute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
)

// Cluster is what the manager needs from the peer.
type Cluster interface {
	Name() string
	Store() *fsm.Store
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
	IsLeader() bool
}

// Virt is a virt driver: it makes a server exist (Build) or vanish
// (Delete) on its host's backend. Both must be idempotent and resume
// from whatever the backend already has. On success the manager commits
// ACTIVE or DELETED.
type Virt interface {
	Kind() string
	Build(ctx context.Context, h *Handle, s fsm.Server) error
	Delete(ctx context.Context, h *Handle, s fsm.Server) error
}

// BuildFailer is implemented by a virt driver that gives back what a
// build that ends in ERROR holds (a bare-metal server's Neutron ports and
// VIFs), as Nova's compute manager deallocates a failed build's networks
// before it sets ERROR. The manager calls BuildFailed once a build ended
// in a PermanentError or ran past BuildTimeout, before it commits ERROR.
// Like every step it commits an intent before each side effect: an error
// wrapping ErrIntent (or fsm.ErrFenced) stops the worker without ERROR,
// and a new worker runs the build, and its failure, again; any other
// error is logged and the build still ends in ERROR (deleting the server
// releases what is left, as in Nova).
type BuildFailer interface {
	BuildFailed(ctx context.Context, h *Handle, s fsm.Server) error
}

// Runner is implemented by a virt driver with work of its own to run
// while the manager runs (a watcher of the backend's long operations).
// The manager calls Run once, with its own context.
type Runner interface {
	Run(ctx context.Context)
}

// Config configures a manager.
type Config struct {
	Workers      int           // servers handled at once (default 32)
	BuildTimeout time.Duration // a build's retries stop here (default 60 min)
	// IntentLease is how long after proposing an action's intent its side
	// effect may still be sent (default DefaultIntentLease; intent.go).
	IntentLease time.Duration
	Logger      *slog.Logger
	Registerer  prometheus.Registerer
}

// Manager drives the servers of one host.
type Manager struct {
	cfg  Config
	c    Cluster
	virt Virt
	log  *slog.Logger
	m    *metrics

	mu      sync.Mutex
	running map[string]*worker
	seen    map[string]seenMark  // server → the owner epoch last seen, and since when
	parked  map[string]parking   // servers waiting for the backend, holding no worker
	started map[string]buildMark // server → when this host began building it
	intents map[string]intentMark
	retry   map[string]retryMark // servers whose last worker stopped on a failed intent
	sem     chan struct{}
	kick    chan struct{} // wakes Run for a scan before the next log entry
	wg      sync.WaitGroup
}

// buildMark is when a host began building a server at one owner epoch;
// it survives the server's parks so timeouts and metrics span the build.
type buildMark struct {
	epoch uint64
	at    time.Time
}

// seenMark is the owner epoch at which this host last saw a server of its
// own, and when it first saw it at that epoch.
type seenMark struct {
	epoch uint64
	at    time.Time
}

// retryMark holds back a new worker for a server whose last worker stopped
// because an intent could not be committed.
type retryMark struct {
	epoch uint64
	at    time.Time                   // no worker before this
	wait  *backoff.ExponentialBackOff // the next hold-back
}

type worker struct {
	epoch  uint64
	cancel context.CancelFunc
}

// New returns a manager for host c.Name() driving servers through virt.
func New(cfg Config, c Cluster, virt Virt) (*Manager, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = 60 * time.Minute
	}
	if cfg.IntentLease <= 0 {
		cfg.IntentLease = DefaultIntentLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, c: c, virt: virt, running: map[string]*worker{}, seen: map[string]seenMark{},
		parked: map[string]parking{}, started: map[string]buildMark{}, intents: map[string]intentMark{}, retry: map[string]retryMark{},
		sem: make(chan struct{}, cfg.Workers), kick: make(chan struct{}, 1),
		log: cfg.Logger.With("component", "compute", "host", c.Name(), "virt", virt.Kind())}
	var err error
	if m.m, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "corral_servers_awaiting_backend", Help: "Servers of this host waiting for their backend (a deploy or undeploy in Ironic) without a worker.",
		}, func() float64 { return float64(m.Parked()) })); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// scanGap is the least time between two scans started by new log entries:
// under a burst of entries a host scans its servers every scanGap rather
// than once per entry. A lost server is fenced by the log itself (its
// owner's next commit fails), so the gap only delays noticing it.
const scanGap = 10 * time.Millisecond

// Run watches the state and drives owned servers until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	store := m.c.Store()
	if r, ok := m.virt.(Runner); ok {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			r.Run(ctx)
		}()
	}
	for {
		idx := store.AppliedIndex()
		m.scan(ctx)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		kicked := make(chan struct{})
		go func() {
			select {
			case <-m.kick:
				close(kicked)
				cancel()
			case <-wctx.Done():
			}
		}()
		err := store.WaitApplied(wctx, idx+1)
		cancel()
		select {
		case <-kicked:
		default:
			if err == nil {
				// New entries: let a burst of them land before the next
				// scan, which walks every server this host owns.
				select {
				case <-ctx.Done():
				case <-m.kick:
				case <-time.After(scanGap):
				}
			}
		}
		if ctx.Err() != nil {
			m.wg.Wait()
			return
		}
	}
}

func needsWork(s fsm.Server) bool { return taskNeedsWork(s.Status, s.TaskState) }

func taskNeedsWork(status fsm.ServerStatus, task string) bool {
	return status == fsm.StatusBuild || task == fsm.TaskDeleting || fsm.IsActionTask(task)
}

// scan starts a worker for every owned server needing work, and cancels
// at once the workers of servers the log has given to another owner or
// epoch: a host that learns it lost a server stops touching it.
func (m *Manager) scan(ctx context.Context) {
	store := m.c.Store()
	owned := store.Owned(m.c.Name()) // sorted by ID
	find := func(id string) (fsm.Ownership, bool) {
		i, ok := slices.BinarySearchFunc(owned, id, func(o fsm.Ownership, id string) int { return strings.Compare(o.ID, id) })
		if !ok {
			return fsm.Ownership{}, false
		}
		return owned[i], true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, w := range m.running {
		if o, ok := find(id); ok && o.Epoch == w.epoch {
			continue
		}
		s, err := store.Server(id) // no longer a live server of ours at this epoch
		if err != nil || s.Host != m.c.Name() || s.Epoch != w.epoch {
			// Counted before the cancel: whoever sees the worker stop
			// sees the fence counted.
			m.m.fenced.Inc()
			w.cancel()
			m.log.Warn("server lost to another owner; its worker stops now", "server", id, "epoch", w.epoch, "owner", s.Host, "owner_epoch", s.Epoch)
			delete(m.running, id)
		}
	}
	for id, p := range m.parked {
		o, ok := find(id)
		if !ok || o.Epoch != p.epoch || !taskNeedsWork(o.Status, o.TaskState) {
			delete(m.parked, id)
			delete(m.started, id)
		} else if (o.TaskState == fsm.TaskDeleting) != p.deleting {
			// A delete requested while the backend builds: a worker
			// takes the server over now, the build's wait is dropped.
			delete(m.parked, id)
		}
	}
	for id, b := range m.started {
		if o, ok := find(id); !ok || o.Epoch != b.epoch || o.Status != fsm.StatusBuild {
			delete(m.started, id)
		}
	}
	for id, r := range m.retry {
		if o, ok := find(id); !ok || o.Epoch != r.epoch || !taskNeedsWork(o.Status, o.TaskState) {
			delete(m.retry, id)
		}
	}
	for id, mk := range m.intents {
		if o, ok := find(id); !ok || o.Epoch != mk.epoch || !fsm.IsActionTask(o.TaskState) {
			delete(m.intents, id)
		}
	}
	now := time.Now()
	for _, s := range owned {
		m.noteOwnership(s)
		if !taskNeedsWork(s.Status, s.TaskState) {
			continue
		}
		_, busy := m.running[s.ID]
		if p, ok := m.parked[s.ID]; ok && p.epoch == s.Epoch {
			busy = true
		}
		if r, ok := m.retry[s.ID]; ok && r.epoch == s.Epoch && now.Before(r.at) {
			busy = true
		}
		if !busy {
			wctx, cancel := context.WithCancel(ctx)
			w := &worker{epoch: s.Epoch, cancel: cancel}
			m.running[s.ID] = w
			m.wg.Add(1)
			go m.work(wctx, s.ID, w)
		}
	}
}

// noteOwnership measures plan commit → new owner aware, once per epoch.
// m.mu is held.
func (m *Manager) noteOwnership(s fsm.Ownership) {
	if m.seen[s.ID].epoch == s.Epoch {
		return
	}
	m.seen[s.ID] = seenMark{epoch: s.Epoch, at: time.Now()}
	if s.Epoch > 1 && !s.OwnerSince.IsZero() {
		m.m.takeover.Observe(time.Since(s.OwnerSince).Seconds())
		m.log.Info("took over server", "server", s.ID, "epoch", s.Epoch, "reason", s.OwnerReason, "status", s.Status, "task", s.TaskState)
	}
}

// work drives one server until it needs nothing more, retrying transient
// failures with backoff (retryBackOff). Each attempt re-reads the committed
// state, so a delete requested during a build takes over, and a lost
// server stops it.
func (m *Manager) work(ctx context.Context, id string, w *worker) {
	defer m.wg.Done()
	awaiting := false
	defer func() {
		w.cancel()
		m.mu.Lock()
		if m.running[id] == w {
			delete(m.running, id)
		}
		m.mu.Unlock()
		if awaiting {
			// The backend may have finished before this worker let go:
			// a scan then finds the server unparked and not running.
			m.poke()
		}
	}()
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-m.sem }()
	h := &Handle{m: m}
	start := m.buildStart(id, w.epoch)
	attempt := 0
	// Every outcome but a transient failure ends here (step returns nil),
	// so Retry only paces the retries: no budget of tries or time (a
	// build's is BuildTimeout, checked by step).
	_, _ = backoff.Retry(ctx, func() (struct{}, error) {
		attempt++
		return struct{}{}, m.step(ctx, h, id, w, start, &awaiting)
	}, backoff.WithBackOff(retryBackOff()), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, in time.Duration) {
			m.log.Warn("server step failed; retrying", "server", id, "attempt", attempt, "in", in, "err", err)
		}))
}

// retryBackOff paces a worker's retries of a transient failure and the
// hold-back of new workers after failed intents: 0.5 s, doubling up to
// 10 s, without jitter (the servers of a host fail at different times).
func retryBackOff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 500 * time.Millisecond, Multiplier: 2, MaxInterval: 10 * time.Second}
}

// step takes the next step of server id (build, delete or action) and
// returns the error to retry it on, or nil when the worker is done: the
// server needs nothing more, is parked (awaiting set), was lost, or ended
// in ERROR.
func (m *Manager) step(ctx context.Context, h *Handle, id string, w *worker, start time.Time, awaiting *bool) error {
	s, err := m.c.Store().Server(id)
	if ctx.Err() != nil || err != nil || s.Host != m.c.Name() || s.Epoch != w.epoch || !needsWork(s) {
		return nil
	}
	switch {
	case s.TaskState == fsm.TaskDeleting:
		err = m.delete(ctx, h, s)
	case fsm.IsActionTask(s.TaskState):
		err = m.act(ctx, h, s) // action.go
	default:
		err = m.build(ctx, h, s, start)
	}
	var pe *PermanentError
	switch {
	case err == nil, errors.Is(err, ErrStop):
		m.clearRetry(id)
	case errors.Is(err, ErrAwaiting):
		*awaiting = true
	case ctx.Err() != nil:
		// cancelled: the server moved or the host stops
	case errors.Is(err, fsm.ErrFenced):
		m.m.fenced.Inc()
		m.log.Warn("server lost to another owner; stopping", "server", id, "epoch", s.Epoch, "err", err)
	case errors.Is(err, ErrIntent):
		in := m.holdBack(id, s.Epoch)
		m.log.Warn("an intent was not committed; this worker stops without the side effect, a new one reads the log and the backend again",
			"server", id, "epoch", s.Epoch, "retry_in", in, "err", err)
	case errors.As(err, &pe):
		m.fail(ctx, h, s, pe.Msg)
	case s.Status == fsm.StatusBuild && time.Since(start) > m.cfg.BuildTimeout:
		m.fail(ctx, h, s, fmt.Sprintf("Build of server %s timed out after %s: %v", id, m.cfg.BuildTimeout, err))
	default:
		return err
	}
	return nil
}

// fail puts s in ERROR with msg; a build's driver first gives back what
// the build held (BuildFailer).
func (m *Manager) fail(ctx context.Context, h *Handle, s fsm.Server, msg string) {
	if f, ok := m.virt.(BuildFailer); ok && s.Status == fsm.StatusBuild {
		err := f.BuildFailed(ctx, h, s)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrIntent), errors.Is(err, fsm.ErrFenced):
			in := m.holdBack(s.ID, s.Epoch)
			m.log.Warn("an intent of a failed build's cleanup was not committed; this worker stops without ERROR, a new one runs the build again",
				"server", s.ID, "epoch", s.Epoch, "retry_in", in, "err", err)
			return
		default:
			m.log.Warn("a failed build could not give back all it held; the server goes to ERROR and its delete releases the rest",
				"server", s.ID, "err", err)
		}
	}
	h.fail(ctx, s, msg)
}

// holdBack keeps a new worker off server id for a while after its worker
// stopped on a failed intent (retryBackOff: growing with each failure at
// this epoch until a step succeeds), and returns how long.
func (m *Manager) holdBack(id string, epoch uint64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.retry[id]
	if !ok || r.epoch != epoch {
		r = retryMark{epoch: epoch, wait: retryBackOff()}
	}
	d := r.wait.NextBackOff()
	r.at = time.Now().Add(d)
	m.retry[id] = r
	return d
}

func (m *Manager) clearRetry(id string) {
	m.mu.Lock()
	delete(m.retry, id)
	m.mu.Unlock()
}

func (m *Manager) build(ctx context.Context, h *Handle, s fsm.Server, start time.Time) error {
	if err := m.virt.Build(ctx, h, s); err != nil {
		return err
	}
	if _, err := h.Reread(s, true); err != nil {
		return err
	}
	if err := h.SetTask(ctx, s, fsm.StatusActive, "", nil); err != nil {
		return err
	}
	m.m.builds.WithLabelValues("active").Inc()
	m.m.buildTime.Observe(time.Since(start).Seconds())
	m.mu.Lock()
	delete(m.started, s.ID)
	m.mu.Unlock()
	m.log.Info("server active", "server", s.ID, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (m *Manager) delete(ctx context.Context, h *Handle, s fsm.Server) error {
	// The intent, committed at our epoch, fences what follows: a host that
	// lost the server fails here, before touching its backend.
	if err := h.Intent(ctx, s, fsm.TaskDeleting); err != nil {
		return err
	}
	if err := m.virt.Delete(ctx, h, s); err != nil {
		return err
	}
	if err := h.SetTask(ctx, s, fsm.StatusDeleted, "", nil); err != nil {
		return err
	}
	m.m.deletes.Inc()
	m.log.Info("server deleted", "server", s.ID)
	return nil
}
