package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// Cluster is what the node mirror needs from its peer.
type Cluster interface {
	Store() *fsm.Store
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
	IsLeader() bool
}

// Settings reads the cluster-wide settings the live hosts advertise.
// AgreedSetting returns the value of key when every live host of the
// given kind advertises the same one, and false while they differ.
type Settings interface {
	AgreedSetting(kind, key string) (string, bool)
}

// Ironic is what the node mirror needs from Ironic; *ironic.Client
// implements it.
type Ironic interface {
	VisitNodes(ctx context.Context, opts ironic.ListOptions, visit func(ironic.Node) error) (asOf time.Time, err error)
	VisitNodesBrief(ctx context.Context, visit func(ironic.Node) error) (asOf time.Time, err error)
	DeleteAllocation(ctx context.Context, id string) error
	ReleaseNode(ctx context.Context, nodeID, instanceUUID string) error
	Undeploy(ctx context.Context, nodeID string) error
}

var _ Ironic = (*ironic.Client)(nil)

// SettingLegacyInventory is the setting of the Ironic driver's
// [workarounds] report_ironic_standard_resource_class_inventory, as hosts
// advertise it in gossip. Only the hosts of kind ironic run that driver,
// so only they decide it.
const SettingLegacyInventory = "legacy_inventory"

// Defaults of Config.
const (
	DefaultInterval         = 5 * time.Second
	DefaultReapAfter        = 20 * time.Second
	DefaultFullSyncInterval = 10 * time.Minute
	DefaultChangeMargin     = time.Minute
)

// maxSyncBatch bounds the nodes carried by one log entry.
const maxSyncBatch = 500

// Config configures the node mirror.
type Config struct {
	// Interval between syncs (default DefaultInterval).
	Interval time.Duration
	// FullSyncInterval is how often a sync pass lists every node, to mark
	// the nodes deleted from Ironic missing and to heal what the passes in
	// between missed (default DefaultFullSyncInterval). The passes in
	// between list only the nodes Ironic changed or created since the
	// previous pass (see incremental.go). At most Interval: every pass is
	// a full one.
	FullSyncInterval time.Duration
	// BriefFullPass makes a full pass list the nodes with ?fields= and
	// their allocations apart (ironic.Client.ListNodesBrief) instead of
	// /v1/nodes/detail: a fraction of the bytes for Ironic to render and
	// for corral to decode. cmd/corral sets it.
	BriefFullPass bool
	// ChangeMargin is how far before the latest change a pass already saw
	// the next pass looks again (default DefaultChangeMargin): it covers a
	// change whose transaction commits after Ironic stamped it, and clock
	// differences between Ironic's API and conductor hosts.
	ChangeMargin time.Duration
	// ReapAfter is how long a server must have been DELETED before the
	// leader removes what Ironic still holds for it (default DefaultReapAfter).
	ReapAfter time.Duration
	// OrphanGrace is how long the leader must have seen a node deployed
	// with neither an allocation nor an instance_uuid, across its syncs,
	// before it undeploys it (default twice Interval; negative: never).
	OrphanGrace time.Duration
	Logger      *slog.Logger
	Registerer  prometheus.Registerer
}

// NodeSync keeps the replicated Ironic node mirror current. Only the
// leader lists Ironic, and it commits only what changed; a node absent
// from one listing is marked missing, never dropped.
type NodeSync struct {
	c        Cluster
	settings Settings
	ir       Ironic
	cfg      Config
	log      *slog.Logger
	now      func() time.Time // the leader's clock, for the grace periods

	duration  prometheus.Histogram
	errs      prometheus.Counter
	reaped    prometheus.Counter
	orphans   prometheus.Counter
	conflicts prometheus.Counter
	passes    *prometheus.CounterVec

	mu       sync.Mutex
	orphanAt map[string]time.Time // node → when this leader first saw it deployed for nobody

	// pass serializes sync passes (Run's, and those the leader runs for a
	// boot that found no node) and guards what one pass leaves the next.
	pass sync.Mutex
	// watermark is, on Ironic's clock, where the next pass of changes
	// starts (less the margin): when Ironic answered the latest pass's
	// first listing (incremental.go); zero: the next pass is a full one.
	watermark time.Time
	lastFull  time.Time // leader's clock: when the latest full pass listed
	// aheadLogged is when (leader's clock) a node stamped ahead of
	// Ironic's API clock was last reported.
	aheadLogged time.Time
	// held are the nodes the reaper looks at (reserved, or deployed), as
	// last listed, stripped of what it does not read.
	held map[string]ironic.Node
	// conflicted are the nodes known to hold a refused inventory (a
	// superset: a refusal is recorded only by a SyncNodes entry, which
	// reportConflicts reads, and the full pass reads them all).
	conflicted map[string]bool
}

// New returns the node mirror of the peer c, which reads the Ironic
// driver's agreed settings from settings.
func New(c Cluster, settings Settings, ir Ironic, cfg Config) (*NodeSync, error) {
	if c == nil || settings == nil || ir == nil {
		return nil, errors.New("the node mirror needs a cluster, its settings and an Ironic client")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ReapAfter <= 0 {
		cfg.ReapAfter = DefaultReapAfter
	}
	if cfg.FullSyncInterval < 0 || cfg.ChangeMargin < 0 {
		return nil, fmt.Errorf("the node mirror's full sync interval (%v) and change margin (%v) cannot be negative", cfg.FullSyncInterval, cfg.ChangeMargin)
	}
	if cfg.FullSyncInterval == 0 {
		cfg.FullSyncInterval = DefaultFullSyncInterval
	}
	if cfg.ChangeMargin == 0 {
		cfg.ChangeMargin = DefaultChangeMargin
	}
	if cfg.OrphanGrace == 0 {
		cfg.OrphanGrace = 2 * cfg.Interval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &NodeSync{c: c, settings: settings, ir: ir, cfg: cfg, log: cfg.Logger.With("component", "node-sync"),
		now: time.Now, orphanAt: map[string]time.Time{}, held: map[string]ironic.Node{}, conflicted: map[string]bool{},
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_node_sync_duration_seconds", Help: "Time to list Ironic's nodes and commit the changes (leader).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_node_sync_errors_total", Help: "Failed node syncs (leader).",
		}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_ironic_leftovers_removed_total", Help: "Allocations, instance_uuids or deployments of deleted servers the leader removed from Ironic.",
		}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_ironic_orphans_undeployed_total", Help: "Nodes found deployed with neither an allocation nor an instance_uuid that the leader undeployed.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_node_inventory_conflicts_total", Help: "Node provider inventories Placement refused, counted once per node when the refusal is recorded (leader).",
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_node_sync_passes_total", Help: "Node sync passes that listed Ironic, by kind: full (every node) or changes (nodes changed or created since the previous pass) (leader).",
		}, []string{"kind"}),
	}
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{s.duration, s.errs, s.reaped, s.orphans, s.conflicts, s.passes} {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Run syncs every interval while this peer leads, until ctx ends.
func (s *NodeSync) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if s.c.IsLeader() {
			if err := s.SyncOnce(ctx); err != nil && ctx.Err() == nil {
				s.errs.Inc()
				s.log.Warn("node sync failed; the mirror keeps its last state", "err", err)
			}
		} else {
			// What a former term observed says nothing about now.
			s.forgetOrphans()
			s.forgetPasses()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SyncOnce lists Ironic and commits the differences with the mirror: a
// full pass lists every node; the passes in between list only the nodes
// changed or created since (incremental.go). The nodes are compared and
// committed as the listing streams in (pass.go).
func (s *NodeSync) SyncOnce(ctx context.Context) error {
	s.pass.Lock()
	defer s.pass.Unlock()
	start := time.Now()
	store := s.c.Store()
	var (
		p    *pass
		asOf time.Time // Ironic's clock when it answered the pass's first listing
		err  error
	)
	listed := s.now()
	full := s.watermark.IsZero() || listed.Sub(s.lastFull) >= s.cfg.FullSyncInterval
	if !full {
		p = s.newPass(store, false)
		if asOf, full, err = s.listChanged(ctx, p); err != nil {
			return err
		}
	}
	if full {
		p = s.newPass(store, true)
		visit := func(n ironic.Node) error { return p.observe(ctx, n) }
		if s.cfg.BriefFullPass {
			asOf, err = s.ir.VisitNodesBrief(ctx, visit)
		} else {
			asOf, err = s.ir.VisitNodes(ctx, ironic.ListOptions{}, visit)
		}
		if err != nil {
			return err
		}
		s.passes.WithLabelValues("full").Inc()
	} else {
		s.passes.WithLabelValues("changes").Inc()
	}
	if err := p.finish(ctx); err != nil {
		return err
	}
	p.keepHeld()
	held := slices.Collect(maps.Values(s.held))
	s.reap(ctx, held)
	s.reapOrphans(ctx, held)
	// Only a pass whose listings completed and whose changes are all
	// committed moves the watermark: a failed one is listed again.
	s.watermark = s.nextWatermark(asOf, p.latest, full)
	if full {
		s.lastFull = listed
	}
	s.duration.Observe(time.Since(start).Seconds())
	return nil
}

// legacyInventory is the value of the legacy inventory workaround to
// commit. The setting belongs to the Ironic driver, so it changes when
// every live ironic host agrees on it (hypervisor hosts do not take
// part); until then the committed value stays, whichever peer leads.
func (s *NodeSync) legacyInventory(store *fsm.Store) bool {
	v, agreed := s.settings.AgreedSetting(fsm.KindIronic, SettingLegacyInventory)
	if !agreed {
		return store.LegacyInventory()
	}
	return v == "true"
}

// reportConflicts logs and counts, once per node for the whole cluster,
// a refusal recorded by the committed entry cmd. A refusal is recorded
// at an entry only on the nodes it upserted or marked missing, or on any
// node when it switched the legacy inventory (flips), so only those are
// read: the whole mirror is not copied for every entry.
func (s *NodeSync) reportConflicts(cmd *fsm.SyncNodes, flips bool) {
	store := s.c.Store()
	at := cmd.At.UTC()
	report := func(n fsm.Node) {
		if n.InventoryConflict == "" {
			return
		}
		s.conflicted[n.UUID] = true
		if n.ConflictSince.Equal(at) {
			s.conflicts.Inc()
			s.log.Warn("Placement refused a node provider's inventory; corral retries at every sync (run the Ironic flavor migration if instances still hold standard classes)",
				"node", n.UUID, "reason", n.InventoryConflict)
		}
	}
	if flips {
		for _, n := range store.Nodes() {
			report(n)
		}
		return
	}
	for _, n := range cmd.Upserts {
		if reason, since, ok := store.NodeConflict(n.UUID); ok {
			report(fsm.Node{UUID: n.UUID, InventoryConflict: reason, ConflictSince: since})
		}
	}
	for _, id := range cmd.Missing {
		if reason, since, ok := store.NodeConflict(id); ok {
			report(fsm.Node{UUID: id, InventoryConflict: reason, ConflictSince: since})
		}
	}
}
