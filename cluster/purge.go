package cluster

import (
	"context"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// settingPurgeServers is advertised in gossip by every peer that knows
// fsm.PurgeServers: an older peer would stop at an entry it cannot apply,
// so the leader purges only while every live peer advertises it.
const settingPurgeServers = "fsm_purge_servers"

// DefaultDeletedRetention is how long deleted servers stay visible
// (GET /servers?deleted=true) before the leader purges them.
const DefaultDeletedRetention = 24 * time.Hour

// purgeLoop runs while this peer leads: it ends the retention of deleted
// servers with PurgeServers entries, deciding with the leader's clock
// which servers are due. Apply checks every ID again, so a purge decided
// by a deposed leader removes nothing that is not due. A negative
// retention keeps deleted servers forever.
func (n *Node) purgeLoop(ctx context.Context) {
	retention := n.cfg.DeletedRetention
	if retention < 0 {
		return
	}
	every := min(max(retention/10, time.Second), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if v, ok := n.AgreedSetting("", settingPurgeServers); !ok || v != "true" {
			continue // a peer of an older version is up: purge after the upgrade
		}
		purged, err := n.purgeDeleted(ctx, time.Now().UTC().Add(-retention))
		if err != nil && ctx.Err() == nil {
			n.log.Warn("purging deleted servers failed; trying again later", "err", err, "purged", purged)
		} else if purged > 0 {
			n.log.Info("purged deleted servers past their retention", "purged", purged, "retention", retention)
		}
	}
}

// purgeDeleted commits PurgeServers entries, at most fsm.MaxPurgeBatch
// servers each, until no server deleted at or before before is left.
func (n *Node) purgeDeleted(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for ctx.Err() == nil {
		ids := n.store.DeletedBefore(before, fsm.MaxPurgeBatch)
		if len(ids) == 0 {
			return total, nil
		}
		if _, err := n.Propose(ctx, &fsm.PurgeServers{Before: before, IDs: ids}); err != nil {
			return total, err
		}
		total += len(ids)
	}
	return total, ctx.Err()
}
