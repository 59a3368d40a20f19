package ironic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
)

// Ironic is what the driver and the node sync need from Ironic; *Client
// implements it.
type Ironic interface {
	SupportsAllocations() bool
	ListNodes(ctx context.Context) ([]Node, error)
	GetNode(ctx context.Context, id string) (Node, error)
	CreateAllocation(ctx context.Context, r AllocationRequest) (Allocation, error)
	WaitAllocation(ctx context.Context, id string) (Allocation, error)
	DeleteAllocation(ctx context.Context, id string) error
	ReserveNode(ctx context.Context, nodeID, instanceUUID string) error
	ReleaseNode(ctx context.Context, nodeID, instanceUUID string) error
	Deploy(ctx context.Context, nodeID string, spec DeploySpec) error
	Undeploy(ctx context.Context, nodeID string) error
	WaitProvisionState(ctx context.Context, nodeID, want string) (Node, error)
	AttachVIF(ctx context.Context, nodeID, vifID string) error
	DetachVIF(ctx context.Context, nodeID, vifID string) error
}

// Cluster is what the driver needs from the peer: the replicated state,
// a way to commit, and whether it leads (for the node sync).
type Cluster interface {
	Name() string
	Store() *fsm.Store
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
	IsLeader() bool
}

// Reservation modes ([ironic] reservation).
const (
	ReserveAuto         = "auto"          // allocations when Ironic has them (>= 1.52), else instance_uuid
	ReserveAllocations  = "allocations"   // Ironic's allocation API
	ReserveInstanceUUID = "instance_uuid" // deprecated: PATCH the node's instance_uuid
)

// DriverConfig configures a host's driver.
type DriverConfig struct {
	Reservation   string        // auto, allocations or instance_uuid
	Workers       int           // servers handled at once (default 8)
	DeployTimeout time.Duration // default 30 min
	BuildTimeout  time.Duration // whole build, retries included (default 60 min)
	Logger        *slog.Logger
	Registerer    prometheus.Registerer
}

// Driver builds and deletes, through Ironic, the servers this host owns.
// Every Ironic side effect is preceded by a committed intent at the
// server's owner epoch, and every outcome is committed with that epoch:
// once the log shows the server owned by another host or epoch, Apply
// rejects the commit (fsm.ErrFenced) and the worker stops at once.
type Driver struct {
	cfg  DriverConfig
	c    Cluster
	ir   Ironic
	log  *slog.Logger
	mode string
	m    *driverMetrics

	mu      sync.Mutex
	running map[string]*worker
	seen    map[string]uint64 // server → the owner epoch this driver last saw it at
	sem     chan struct{}
	wg      sync.WaitGroup
}

// worker is one server's goroutine, bound to the epoch it started at.
type worker struct {
	epoch  uint64
	cancel context.CancelFunc
}

// NewDriver returns a driver for the host c.Name().
func NewDriver(cfg DriverConfig, c Cluster, ir Ironic) (*Driver, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.DeployTimeout <= 0 {
		cfg.DeployTimeout = 30 * time.Minute
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = 60 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mode, err := resolveMode(cfg.Reservation, ir.SupportsAllocations())
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, c: c, ir: ir, log: cfg.Logger.With("component", "driver", "host", c.Name()),
		mode: mode, running: map[string]*worker{}, seen: map[string]uint64{}, sem: make(chan struct{}, cfg.Workers)}
	if d.m, err = newDriverMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	if mode == ReserveInstanceUUID {
		d.log.Warn("reserving Ironic nodes by instance_uuid is deprecated: use an Ironic with the allocation API (microversion 1.52+) and [ironic] reservation = auto",
			"configured", cfg.Reservation)
	}
	return d, nil
}

func resolveMode(want string, haveAllocations bool) (string, error) {
	switch want {
	case "", ReserveAuto:
		if haveAllocations {
			return ReserveAllocations, nil
		}
		return ReserveInstanceUUID, nil
	case ReserveAllocations:
		if !haveAllocations {
			return "", fmt.Errorf("%w: [ironic] reservation = allocations needs microversion 1.52: use auto or instance_uuid", ErrUnsupported)
		}
		return ReserveAllocations, nil
	case ReserveInstanceUUID:
		return ReserveInstanceUUID, nil
	}
	return "", fmt.Errorf("[ironic] reservation %q is unknown: use auto, allocations or instance_uuid", want)
}

// Mode returns the reservation mode in use.
func (d *Driver) Mode() string { return d.mode }

// Run watches the replicated state and starts a worker for every owned
// server that needs Ironic work, until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	store := d.c.Store()
	for {
		idx := store.AppliedIndex()
		d.scan(ctx)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = store.WaitApplied(wctx, idx+1)
		cancel()
		if ctx.Err() != nil {
			d.wg.Wait()
			return
		}
	}
}

func needsWork(s fsm.Server) bool {
	return s.Status == fsm.StatusBuild || s.TaskState == fsm.TaskDeleting
}

// scan starts a worker for every owned server needing work, and cancels
// at once the workers of servers the log has given to another owner or
// epoch: a host that learns it lost a server stops touching it.
func (d *Driver) scan(ctx context.Context) {
	store := d.c.Store()
	d.mu.Lock()
	for id, w := range d.running {
		s, err := store.Server(id)
		if err != nil || s.Host != d.c.Name() || s.Epoch != w.epoch {
			w.cancel()
			d.m.fenced.Inc()
			d.log.Warn("server lost to another owner; its worker stops now", "server", id, "epoch", w.epoch, "owner", s.Host, "owner_epoch", s.Epoch)
			delete(d.running, id)
		}
	}
	d.mu.Unlock()
	for _, s := range store.OwnedBy(d.c.Name()) {
		d.noteOwnership(s)
		if !needsWork(s) {
			continue
		}
		d.mu.Lock()
		_, busy := d.running[s.ID]
		if !busy {
			wctx, cancel := context.WithCancel(ctx)
			w := &worker{epoch: s.Epoch, cancel: cancel}
			d.running[s.ID] = w
			d.wg.Add(1)
			go d.work(wctx, s.ID, w)
		}
		d.mu.Unlock()
	}
}

// noteOwnership records when this host first sees a server it took over,
// measuring plan commit → new owner aware.
func (d *Driver) noteOwnership(s fsm.Server) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[s.ID] == s.Epoch {
		return
	}
	d.seen[s.ID] = s.Epoch
	if s.Epoch > 1 && !s.OwnerSince.IsZero() {
		d.m.takeover.Observe(time.Since(s.OwnerSince).Seconds())
		d.log.Info("took over server", "server", s.ID, "epoch", s.Epoch, "reason", s.OwnerReason, "status", s.Status, "task", s.TaskState)
	}
}

// errStop ends a worker quietly (the server needs nothing more from us).
var errStop = errors.New("nothing to do")

// permanentError ends a build in ERROR with its message as the fault.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func permanent(format string, args ...any) error {
	return &permanentError{msg: fmt.Sprintf(format, args...)}
}

// work drives one server until it needs nothing more, retrying transient
// failures with backoff. Each attempt re-reads the committed state, so a
// delete requested during a build takes over, and a lost server stops it.
func (d *Driver) work(ctx context.Context, id string, w *worker) {
	defer d.wg.Done()
	defer func() {
		w.cancel()
		d.mu.Lock()
		if d.running[id] == w {
			delete(d.running, id)
		}
		d.mu.Unlock()
	}()
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-d.sem }()
	start := time.Now()
	backoff := 500 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		s, err := d.c.Store().Server(id)
		if err != nil || s.Host != d.c.Name() || s.Epoch != w.epoch || !needsWork(s) {
			return
		}
		if s.TaskState == fsm.TaskDeleting {
			err = d.delete(ctx, s)
		} else {
			err = d.build(ctx, s, start)
		}
		var pe *permanentError
		switch {
		case err == nil, errors.Is(err, errStop):
			return
		case ctx.Err() != nil:
			return // cancelled: the server moved or the host stops
		case errors.Is(err, fsm.ErrFenced):
			d.m.fenced.Inc()
			d.log.Warn("server lost to another owner; stopping", "server", id, "epoch", s.Epoch, "err", err)
			return
		case errors.As(err, &pe):
			d.fail(ctx, s, pe.msg)
			return
		case s.Status == fsm.StatusBuild && time.Since(start) > d.cfg.BuildTimeout:
			d.fail(ctx, s, fmt.Sprintf("Build of server %s timed out after %s: %v", id, d.cfg.BuildTimeout, err))
			return
		}
		d.log.Warn("server step failed; retrying", "server", id, "attempt", attempt, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 10*time.Second {
			backoff *= 2
		}
	}
}

// commit proposes an owner command; fenced or business errors come back.
func (d *Driver) commit(ctx context.Context, cmd fsm.Command) error {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := d.c.Propose(cctx, cmd)
	return err
}

func (d *Driver) setTask(ctx context.Context, s fsm.Server, status fsm.ServerStatus, task string, fault *fsm.Fault) error {
	return d.commit(ctx, &fsm.SetServerTask{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: status, TaskState: task, Fault: fault})
}

// fail puts a server in ERROR with a fault an operator can act on.
func (d *Driver) fail(ctx context.Context, s fsm.Server, msg string) {
	d.m.builds.WithLabelValues("error").Inc()
	d.log.Error("server failed", "server", s.ID, "fault", msg)
	if err := d.setTask(ctx, s, fsm.StatusError, "", &fsm.Fault{Code: 500, Message: msg}); err != nil {
		d.log.Error("recording the fault failed", "server", s.ID, "err", err)
	}
}

// reread returns the committed server, or errStop if it is no longer ours
// or a delete was requested while building.
func (d *Driver) reread(s fsm.Server, building bool) (fsm.Server, error) {
	cur, err := d.c.Store().Server(s.ID)
	if err != nil {
		return s, errStop
	}
	if cur.Host != s.Host || cur.Epoch != s.Epoch {
		return cur, fmt.Errorf("%w: server %s moved to %s at epoch %d", fsm.ErrFenced, s.ID, cur.Host, cur.Epoch)
	}
	if building && cur.TaskState == fsm.TaskDeleting {
		return cur, fmt.Errorf("delete requested during build of %s: switching to delete", s.ID) // transient: the next attempt deletes
	}
	return cur, nil
}
