package mirror

import (
	"context"
	"errors"
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
	ListNodes(ctx context.Context) ([]ironic.Node, error)
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
	DefaultInterval  = 5 * time.Second
	DefaultReapAfter = 20 * time.Second
)

// maxSyncBatch bounds the nodes carried by one log entry.
const maxSyncBatch = 500

// Config configures the node mirror.
type Config struct {
	// Interval between syncs (default DefaultInterval).
	Interval time.Duration
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

	duration prometheus.Histogram
	errs     prometheus.Counter
	reaped   prometheus.Counter
	orphans  prometheus.Counter

	mu       sync.Mutex
	orphanAt map[string]time.Time // node → when this leader first saw it deployed for nobody
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
	if cfg.OrphanGrace == 0 {
		cfg.OrphanGrace = 2 * cfg.Interval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &NodeSync{c: c, settings: settings, ir: ir, cfg: cfg, log: cfg.Logger.With("component", "node-sync"),
		now: time.Now, orphanAt: map[string]time.Time{},
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
	}
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{s.duration, s.errs, s.reaped, s.orphans} {
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
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SyncOnce lists Ironic and commits the differences with the mirror.
func (s *NodeSync) SyncOnce(ctx context.Context) error {
	start := time.Now()
	nodes, err := s.ir.ListNodes(ctx)
	if err != nil {
		return err
	}
	store := s.c.Store()
	mirror := map[string]fsm.Node{}
	retry := false
	for _, n := range store.Nodes() {
		mirror[n.UUID] = n
		retry = retry || n.InventoryConflict != ""
	}
	s.reap(ctx, nodes)
	s.reapOrphans(ctx, nodes)
	seen := map[string]bool{}
	var upserts []fsm.Node
	for _, n := range nodes {
		m := MirrorNode(n)
		seen[m.UUID] = true
		if old, ok := mirror[m.UUID]; ok && !old.Missing && old.SameObservation(m) {
			continue
		}
		upserts = append(upserts, m)
	}
	var missing []string
	for _, id := range slices.Sorted(maps.Keys(mirror)) {
		if !seen[id] && !mirror[id].Missing {
			missing = append(missing, id)
		}
	}
	legacy := s.legacyInventory(store)
	flagChanged := store.LegacyInventory() != legacy
	first := true
	for len(upserts) > 0 || len(missing) > 0 || (first && (flagChanged || retry)) {
		cmd := &fsm.SyncNodes{}
		if first {
			cmd.LegacyInventory = &legacy
			first = false
		}
		k := min(len(upserts), maxSyncBatch)
		cmd.Upserts, upserts = upserts[:k], upserts[k:]
		if len(upserts) == 0 {
			cmd.Missing, missing = missing, nil
		}
		if _, err := s.c.Propose(ctx, cmd); err != nil {
			return err
		}
		s.reportConflicts(cmd.At)
		if len(cmd.Upserts)+len(cmd.Missing) > 0 {
			s.log.Debug("node mirror updated", "changed", len(cmd.Upserts), "missing", len(cmd.Missing))
		}
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

// MirrorNode converts an Ironic node to its mirror entry.
func MirrorNode(n ironic.Node) fsm.Node {
	traits := slices.Clone(n.Traits)
	slices.Sort(traits)
	return fsm.Node{UUID: n.UUID, Name: n.Name, ResourceClass: n.ResourceClass, ProvisionState: n.ProvisionState,
		PowerState: n.PowerState, Maintenance: n.Maintenance, Properties: maps.Clone(n.Properties),
		Capabilities: maps.Clone(n.Capabilities), Traits: traits, InstanceUUID: n.InstanceUUID,
		AllocationUUID: n.AllocationUUID}
}

// reportConflicts logs, once per node for the whole cluster, a refusal
// recorded by the entry committed at "at".
func (s *NodeSync) reportConflicts(at time.Time) {
	for _, n := range s.c.Store().Nodes() {
		if n.InventoryConflict != "" && n.ConflictSince.Equal(at.UTC()) {
			s.log.Warn("Placement refused a node provider's inventory; corral retries at every sync (run the Ironic flavor migration if instances still hold standard classes)",
				"node", n.UUID, "reason", n.InventoryConflict)
		}
	}
}
