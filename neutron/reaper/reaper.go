package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// Cluster is what the reaper needs from its peer.
type Cluster interface {
	Store() *fsm.Store
	IsLeader() bool
}

// Neutron is what the reaper needs from Neutron; *neutron.Client
// implements it.
type Neutron interface {
	PortsDescribed(ctx context.Context, description string) ([]neutron.PortState, error)
	PortState(ctx context.Context, id string) (neutron.PortState, error)
	DeletePortAtRevision(ctx context.Context, id string, rev int) error
	ReleasePortAtRevision(ctx context.Context, id string, rev int) (neutron.PortState, error)
}

var _ Neutron = (*neutron.Client)(nil)

// Defaults of Config.
const (
	DefaultInterval = time.Minute
	DefaultGrace    = 10 * time.Minute
)

// What the reaper does to a port, and why (the labels of its counter).
const (
	ActionDelete  = "delete"  // a port corral created
	ActionRelease = "release" // a user's port, given back
	ReasonDeleted = "server_deleted"
	// ReasonUnrecorded: a port corral created for a live server that the
	// server's record does not hold. A port create is not idempotent and
	// Neutron may carry one out long after its owner gave up on it (and
	// made another): the late port is the server's by its device, but no
	// one uses it.
	ReasonUnrecorded = "unrecorded"
)

// Config configures the reaper.
type Config struct {
	// Interval between passes while this peer leads (default DefaultInterval).
	Interval time.Duration
	// Grace is how long the leader must see a port orphaned, unchanged,
	// across its passes before it acts on it (default DefaultGrace). A
	// deleted server's create or take-over intent younger than the grace
	// (by the leader's stamp) also keeps its ports from being touched.
	Grace      time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the leader's clock (default time.Now); tests move it.
	Now func() time.Time
}

// Reaper deletes, on the leader, the Neutron ports corral created for
// servers that are gone, and gives back the users' ports still bound to
// deleted servers.
type Reaper struct {
	c   Cluster
	nt  Neutron
	cfg Config
	log *slog.Logger

	reaped   *prometheus.CounterVec
	errs     prometheus.Counter
	orphaned prometheus.Gauge

	mu sync.Mutex
	// seen: port → when this leader first saw it orphaned, at which
	// revision, for which server and action.
	seen map[string]sighting
	// settled are the deleted servers whose users' ports this leader found
	// given back once the grace after the delete was over: never read again.
	settled map[string]bool
}

type sighting struct {
	first  time.Time
	rev    int
	server string
	action string
}

// candidate is a port found orphaned by one pass.
type candidate struct {
	port   neutron.PortState
	server string
	reason string
	action string
}

// New returns the reaper of the peer c.
func New(c Cluster, nt Neutron, cfg Config) (*Reaper, error) {
	if c == nil || nt == nil {
		return nil, errors.New("the port reaper needs a cluster and a Neutron client")
	}
	if cfg.Interval < 0 || cfg.Grace < 0 {
		return nil, fmt.Errorf("the port reaper's interval (%v) and grace (%v) cannot be negative", cfg.Interval, cfg.Grace)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reaper{c: c, nt: nt, cfg: cfg, log: cfg.Logger.With("component", "port-reaper"),
		seen: map[string]sighting{}, settled: map[string]bool{},
		reaped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_neutron_ports_reaped_total",
			Help: "Neutron ports of servers that are gone the leader deleted (action delete: corral created them) or gave back (action release: the user's), by reason (server_deleted; unrecorded: a port corral created for a live server that its record does not hold).",
		}, []string{"action", "reason"}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_neutron_port_reap_errors_total",
			Help: "Failed Neutron requests of the leader's port reaper (listings, reads, deletes and releases); each is tried again at the next pass.",
		}),
		orphaned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corral_neutron_ports_orphaned",
			Help: "Neutron ports the leader saw orphaned at its latest pass and reaps once their grace is over.",
		}),
	}
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{r.reaped, r.errs, r.orphaned} {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// Run makes a pass every interval until ctx ends; a peer that does not
// lead forgets what it saw (a new leader re-arms every grace).
func (r *Reaper) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("port reaper pass failed; trying again at the next one", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass looks at Neutron once, if this peer leads: it arms the grace of
// every port newly found orphaned and acts on those whose grace is over.
func (r *Reaper) Pass(ctx context.Context) error {
	if !r.c.IsLeader() {
		r.forget()
		return nil
	}
	now := r.cfg.Now()
	marked, err := r.nt.PortsDescribed(ctx, neutron.CreatedByCorral)
	if err != nil {
		r.errs.Inc()
		return fmt.Errorf("listing the ports corral created: %w", err)
	}
	store := r.c.Store()
	found := map[string]candidate{}
	for _, p := range marked {
		if cand, ok := r.judgeMarked(store, p, now); ok {
			found[p.ID] = cand
		}
	}
	r.findUserPorts(ctx, store, now, found)
	due := r.arm(found, now)
	for _, cand := range due {
		if !r.c.IsLeader() {
			r.forget()
			return nil
		}
		r.act(ctx, cand, now)
	}
	r.mu.Lock()
	r.orphaned.Set(float64(len(r.seen)))
	r.mu.Unlock()
	return nil
}

// judgeMarked says whether a port corral created is orphaned: bound to a
// compute device that is a deleted server of the state, or a live
// server's port that its record does not hold, with no create or
// take-over intent of that server younger than the grace. A port whose
// server the state does not know is left alone: it may be another
// cluster's (servers are created before any of their ports, so this
// cluster's never are unknown but once purged, after deleted_retention).
func (r *Reaper) judgeMarked(store *fsm.Store, p neutron.PortState, now time.Time) (candidate, bool) {
	if p.DeviceID == "" || !strings.HasPrefix(p.DeviceOwner, "compute:") {
		return candidate{}, false // given back or taken by someone else: not a server's any more
	}
	srv, err := store.Server(p.DeviceID)
	if err != nil {
		return candidate{}, false
	}
	net := store.ServerNet(srv.ID)
	if r.pending(net, now) {
		return candidate{}, false
	}
	user := userPorts(srv, net)[p.ID]
	if srv.Live() {
		if _, recorded := net.Port(p.ID); recorded || user {
			return candidate{}, false
		}
		return candidate{port: p, server: srv.ID, reason: ReasonUnrecorded, action: ActionDelete}, true
	}
	action := ActionDelete
	if user {
		// The user's, described as corral's by the user: given back, never deleted.
		action = ActionRelease
	}
	return candidate{port: p, server: srv.ID, reason: ReasonDeleted, action: action}, true
}

// pending reports whether the server's last port intent is a create or a
// take-over the leader stamped less than a grace ago: its port may still
// be in the making.
func (r *Reaper) pending(net fsm.ServerNet, now time.Time) bool {
	in := net.Intent
	return in != nil && (in.Step == fsm.PortStepCreate || in.Step == fsm.PortStepBind) && now.Sub(in.At) < r.cfg.Grace
}

// userPorts are the ports the user passed in for srv, or that corral
// recorded as the user's.
func userPorts(srv fsm.Server, net fsm.ServerNet) map[string]bool {
	out := map[string]bool{}
	for _, n := range srv.Networks {
		if n.Port != "" {
			out[n.Port] = true
		}
	}
	for _, p := range net.Ports {
		if p.User {
			out[p.ID] = true
		}
	}
	return out
}

// findUserPorts reads the users' ports of the deleted servers and adds to
// found those still bound to their deleted server. A server whose ports
// were all found given back once its delete is a grace old is settled.
func (r *Reaper) findUserPorts(ctx context.Context, store *fsm.Store, now time.Time, found map[string]candidate) {
	r.mu.Lock()
	settled := maps.Clone(r.settled)
	r.mu.Unlock()
	deleted := map[string]bool{}
	for _, srv := range store.DeletedServers() {
		deleted[srv.ID] = true
		net := store.ServerNet(srv.ID)
		ids := userPorts(srv, net)
		if len(ids) == 0 || settled[srv.ID] || r.pending(net, now) {
			continue
		}
		clean := true
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			if _, listed := found[id]; listed {
				clean = false
				continue
			}
			p, err := r.nt.PortState(ctx, id)
			switch {
			case errors.Is(err, neutron.ErrNotFound):
				continue
			case err != nil:
				r.errs.Inc()
				r.log.Warn("reading a user's port of a deleted server failed; trying again at the next pass",
					"port", id, "server", srv.ID, "err", err)
				clean = false
				continue
			case p.DeviceID != srv.ID:
				continue
			}
			clean = false
			found[id] = candidate{port: p, server: srv.ID, reason: ReasonDeleted, action: ActionRelease}
		}
		if clean && now.Sub(srv.UpdatedAt) >= r.cfg.Grace {
			settled[srv.ID] = true
		}
	}
	for id := range settled {
		if !deleted[id] {
			delete(settled, id) // purged
		}
	}
	r.mu.Lock()
	r.settled = settled
	r.mu.Unlock()
}

// arm records when each orphaned port was first seen so (again, when its
// revision, server or action changed) and returns those seen so for the
// grace, sorted by port.
func (r *Reaper) arm(found map[string]candidate, now time.Time) []candidate {
	r.mu.Lock()
	defer r.mu.Unlock()
	var due []candidate
	for _, id := range slices.Sorted(maps.Keys(found)) {
		c := found[id]
		s, ok := r.seen[id]
		if !ok || s.rev != c.port.RevisionNumber || s.server != c.server || s.action != c.action {
			r.seen[id] = sighting{first: now, rev: c.port.RevisionNumber, server: c.server, action: c.action}
			r.log.Info("a Neutron port's server is gone; the leader reaps it unless that changes",
				"port", id, "server", c.server, "reason", c.reason, "action", c.action, "grace", r.cfg.Grace)
			continue
		}
		if now.Sub(s.first) >= r.cfg.Grace {
			due = append(due, c)
		}
	}
	for id := range r.seen {
		if _, ok := found[id]; !ok {
			delete(r.seen, id)
		}
	}
	return due
}

// act deletes or gives back one port at the revision seen.
func (r *Reaper) act(ctx context.Context, c candidate, now time.Time) {
	p := c.port
	var err error
	if c.action == ActionRelease {
		_, err = r.nt.ReleasePortAtRevision(ctx, p.ID, p.RevisionNumber)
	} else {
		err = r.nt.DeletePortAtRevision(ctx, p.ID, p.RevisionNumber)
	}
	r.mu.Lock()
	first := r.seen[p.ID].first
	if err == nil || errors.Is(err, neutron.ErrChanged) || errors.Is(err, neutron.ErrNotFound) {
		delete(r.seen, p.ID)
	}
	r.mu.Unlock()
	switch {
	case errors.Is(err, neutron.ErrChanged), errors.Is(err, neutron.ErrNotFound):
		r.log.Info("a Neutron port changed since the leader saw its server gone; looking at it again",
			"port", p.ID, "server", c.server, "err", err)
		return
	case err != nil:
		r.errs.Inc()
		r.log.Warn("reaping a Neutron port failed; trying again at the next pass", "port", p.ID, "server", c.server,
			"action", c.action, "err", err)
		return
	}
	r.reaped.WithLabelValues(c.action, c.reason).Inc()
	msg := "deleted a Neutron port corral created for a server that is gone"
	if c.reason == ReasonUnrecorded {
		msg = "deleted a Neutron port corral created for a live server that its record does not hold"
	}
	if c.action == ActionRelease {
		msg = "gave back a user's Neutron port still bound to a deleted server"
	}
	r.log.Info(msg, "port", p.ID, "server", c.server, "reason", c.reason, "action", c.action,
		"network", p.NetworkID, "project", p.ProjectID, "revision", p.RevisionNumber,
		"orphaned_for", now.Sub(first).Round(time.Millisecond))
}

// forget drops what this peer observed while it led.
func (r *Reaper) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.seen)
	clear(r.settled)
	r.orphaned.Set(0)
}
