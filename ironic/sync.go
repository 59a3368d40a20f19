package ironic

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
)

// NodeSync keeps the replicated Ironic node mirror current. Only the
// leader lists Ironic, and it commits only what changed; a node absent
// from one listing is marked missing, never dropped.
type NodeSync struct {
	c        Cluster
	ir       Ironic
	interval time.Duration
	legacy   bool // node providers also report VCPU, MEMORY_MB, DISK_GB
	log      *slog.Logger
	duration prometheus.Histogram
	errs     prometheus.Counter
}

// maxSyncBatch bounds the nodes carried by one log entry.
const maxSyncBatch = 500

// NewNodeSync returns a sync running every interval (default 5 s).
func NewNodeSync(c Cluster, ir Ironic, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*NodeSync, error) {
	return NewNodeSyncLegacy(c, ir, interval, false, logger, reg)
}

// NewNodeSyncLegacy is NewNodeSync with [workarounds]
// report_ironic_standard_resource_class_inventory.
func NewNodeSyncLegacy(c Cluster, ir Ironic, interval time.Duration, legacy bool, logger *slog.Logger, reg prometheus.Registerer) (*NodeSync, error) {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &NodeSync{c: c, ir: ir, interval: interval, legacy: legacy, log: logger.With("component", "node-sync"),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_node_sync_duration_seconds", Help: "Time to list Ironic's nodes and commit the changes (leader).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_node_sync_errors_total", Help: "Failed node syncs (leader).",
		}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{s.duration, s.errs} {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Run syncs every interval while this peer leads, until ctx ends.
func (s *NodeSync) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if s.c.IsLeader() {
			if err := s.SyncOnce(ctx); err != nil && ctx.Err() == nil {
				s.errs.Inc()
				s.log.Warn("node sync failed; the mirror keeps its last state", "err", err)
			}
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
	mirror := map[string]fsm.Node{}
	conflicts := map[string]bool{}
	for _, n := range s.c.Store().Nodes() {
		mirror[n.UUID] = n
		conflicts[n.UUID] = n.InventoryConflict != ""
	}
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
	legacy := s.legacy
	flagChanged := s.c.Store().LegacyInventory() != legacy
	retry := false
	for _, c := range conflicts {
		retry = retry || c
	}
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
		if len(cmd.Upserts)+len(cmd.Missing) > 0 {
			s.log.Debug("node mirror updated", "changed", len(cmd.Upserts), "missing", len(cmd.Missing))
		}
	}
	// Report each node whose provider Placement refused once, not at
	// every sync.
	for _, n := range s.c.Store().Nodes() {
		if n.InventoryConflict != "" && !conflicts[n.UUID] {
			s.log.Warn("Placement refused a node provider's inventory; corral retries at every sync (run the Ironic flavor migration if instances still hold standard classes)",
				"node", n.UUID, "reason", n.InventoryConflict)
		}
	}
	s.duration.Observe(time.Since(start).Seconds())
	return nil
}

// MirrorNode converts an Ironic node to its mirror entry.
func MirrorNode(n Node) fsm.Node {
	traits := slices.Clone(n.Traits)
	slices.Sort(traits)
	return fsm.Node{UUID: n.UUID, Name: n.Name, ResourceClass: n.ResourceClass, ProvisionState: n.ProvisionState,
		PowerState: n.PowerState, Maintenance: n.Maintenance, Properties: maps.Clone(n.Properties),
		Capabilities: maps.Clone(n.Capabilities), Traits: traits, InstanceUUID: n.InstanceUUID,
		AllocationUUID: n.AllocationUUID}
}
