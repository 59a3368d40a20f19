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
	reaped   prometheus.Counter
	// ReapAfter is how long a server must have been DELETED before the
	// leader removes what Ironic still holds for it (default 20 s).
	ReapAfter time.Duration
}

// SettingLegacyInventory is the gossip setting of [workarounds]
// report_ironic_standard_resource_class_inventory.
const SettingLegacyInventory = "legacy_inventory"

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
	s := &NodeSync{c: c, ir: ir, interval: interval, legacy: legacy, ReapAfter: reapAfter, log: logger.With("component", "node-sync"),
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
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{s.duration, s.errs, s.reaped} {
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
	retry := false
	for _, n := range s.c.Store().Nodes() {
		mirror[n.UUID] = n
		retry = retry || n.InventoryConflict != ""
	}
	s.reap(ctx, nodes)
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
	if ag, ok := s.c.(interface{ AgreedSetting(string) (string, bool) }); ok {
		// A peer-wide setting changes when every live peer agrees on it; until
		// then the committed value stays, whichever peer leads.
		v, agreed := ag.AgreedSetting(SettingLegacyInventory)
		if !agreed {
			legacy = s.c.Store().LegacyInventory()
		} else {
			legacy = v == "true"
		}
	}
	flagChanged := s.c.Store().LegacyInventory() != legacy
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

// MirrorNode converts an Ironic node to its mirror entry.
func MirrorNode(n Node) fsm.Node {
	traits := slices.Clone(n.Traits)
	slices.Sort(traits)
	return fsm.Node{UUID: n.UUID, Name: n.Name, ResourceClass: n.ResourceClass, ProvisionState: n.ProvisionState,
		PowerState: n.PowerState, Maintenance: n.Maintenance, Properties: maps.Clone(n.Properties),
		Capabilities: maps.Clone(n.Capabilities), Traits: traits, InstanceUUID: n.InstanceUUID,
		AllocationUUID: n.AllocationUUID}
}

// reapAfter is how long a server must have been DELETED before the leader
// removes what Ironic still holds for it.
const reapAfter = 20 * time.Second

// reap removes what Ironic still holds for servers deleted a while ago:
// an allocation or instance_uuid a fenced owner created after the delete,
// or a node left deployed. A deleted server never comes back, so acting on
// its leftovers needs no owner.
func (s *NodeSync) reap(ctx context.Context, nodes []Node) {
	store := s.c.Store()
	for _, n := range nodes {
		id := n.InstanceUUID
		if id == "" {
			id = n.AllocationUUID
		}
		if id == "" {
			continue
		}
		srv, err := store.Server(id)
		if err != nil || srv.Status != fsm.StatusDeleted || time.Since(srv.UpdatedAt) < s.ReapAfter {
			continue
		}
		var rerr error
		switch n.ProvisionState {
		case "available", "manageable", "enroll":
			if n.AllocationUUID != "" {
				rerr = s.ir.DeleteAllocation(ctx, n.AllocationUUID)
			}
			if rerr == nil && n.InstanceUUID != "" {
				rerr = s.ir.ReleaseNode(ctx, n.UUID, n.InstanceUUID)
			}
		case "active", "deploy failed", "error":
			rerr = s.ir.Undeploy(ctx, n.UUID)
		default:
			continue // in transition: look again at the next sync
		}
		if rerr != nil {
			s.log.Warn("removing a deleted server's leftovers from Ironic failed", "server", id, "node", n.UUID, "err", rerr)
			continue
		}
		s.reaped.Inc()
		s.log.Warn("removed a deleted server's leftovers from Ironic", "server", id, "node", n.UUID, "state", n.ProvisionState)
	}
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
