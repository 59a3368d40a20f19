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
// state (fsm.SetQuotaDefaults) when recordQuotaDefaults says so.
func (n *Node) reconcileQuotaDefaults(ctx context.Context) error {
	own := n.cfg.QuotaDefaults
	agreed, ok := n.AgreedSetting("", settingQuota)
	if !recordQuotaDefaults(own, n.store.QuotaDefaults(), agreed, ok, n.CommandKnown(fsm.CmdSetQuotaDefaults)) {
		return nil
	}
	if _, err := n.applyLocal(ctx, &fsm.SetQuotaDefaults{Limits: maps.Clone(own)}); err != nil {
		return fmt.Errorf("record the peers' [quota] limits: %w", err)
	}
	n.log.Info("recorded the [quota] limits every peer is configured with", "limits", own.String())
	return nil
}

// recordQuotaDefaults is whether the leader, configured with own, records
// it over the recorded limits: only when every live peer advertises the
// same digest (agreed, ok: Node.AgreedSetting) and can apply the command
// (known). The leader's [quota] wins only when no live peer is configured
// otherwise, so a peer with other limits cannot flip-flop the defaults as
// leadership moves: while the peers differ the state keeps what it holds,
// and a rolling change of [quota] takes effect once, when the last peer
// has it. A peer that predates quotas advertises nothing, which also
// holds the state as it is.
func recordQuotaDefaults(own, recorded fsm.QuotaLimits, agreed string, ok, known bool) bool {
	switch {
	case own == nil, own.String() == recorded.String():
		return false
	case !ok || agreed != quotaDigest(own):
		return false
	default:
		return known
	}
}

// checkQuotaCommand refuses a quota change (os-quota-sets, os-quota-class-
// sets) until every live peer can apply its command (known: CommandKnown):
// an older peer would stop at the entry, and the snapshot would carry
// quota records it cannot read. Other commands pass.
func checkQuotaCommand(cmd fsm.Command, known func(fsm.CommandType) bool) error {
	switch cmd.(type) {
	case *fsm.UpdateQuotas, *fsm.DeleteQuotas, *fsm.SetQuotaDefaults:
		if !known(cmd.Type()) {
			return fmt.Errorf("%w: quotas can be changed once every peer runs a version that applies them: upgrade every peer first", fsm.ErrConflict)
		}
	}
	return nil
}
