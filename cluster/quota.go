package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	"github.com/corral-dev/corral/fsm"
)

// settingQuota is advertised in gossip by every peer configured with
// [quota] (Config.QuotaDefaults): a digest of its limits, which stays
// small whatever they are.
const settingQuota = "quota"

// quotaDigest is the digest of limits advertised as settingQuota.
func quotaDigest(l fsm.QuotaLimits) string {
	sum := sha256.Sum256([]byte(l.String()))
	return hex.EncodeToString(sum[:8])
}

// reconcileQuotaDefaults records this peer's [quota] in the replicated
// state (fsm.SetQuotaDefaults) when every live peer is configured with
// the same limits and the state holds others: a rolling change of
// [quota] takes effect once, when the last peer has it, whichever peer
// leads meanwhile. Until every live peer can apply the command, nothing
// is recorded, and a state without quotas refuses nothing.
func (n *Node) reconcileQuotaDefaults(ctx context.Context) error {
	own := n.cfg.QuotaDefaults
	if own == nil || n.store.QuotaDefaults().String() == own.String() {
		return nil
	}
	if v, agreed := n.AgreedSetting("", settingQuota); !agreed || v != quotaDigest(own) {
		return nil // the peers' [quota] differ, or one predates quotas
	}
	if !n.CommandKnown(fsm.CmdSetQuotaDefaults) {
		return nil
	}
	if _, err := n.applyLocal(ctx, &fsm.SetQuotaDefaults{Limits: maps.Clone(own)}); err != nil {
		return fmt.Errorf("record the peers' [quota] limits: %w", err)
	}
	n.log.Info("recorded the [quota] limits every peer is configured with", "limits", own.String())
	return nil
}
