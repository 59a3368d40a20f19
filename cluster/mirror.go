package cluster

import (
	"context"
	"time"
)

// MirrorSync brings the replicated Ironic node mirror up to date now: one
// pass of the leader's node sync (ironic/mirror), committing what changed.
// cmd/corral wires it; a peer without Ironic has none.
type MirrorSync interface {
	SyncOnce(ctx context.Context) error
}

// SetMirrorSync gives the leader the node sync it runs once before it
// records a new server as "No valid host", so that a boot right after
// nodes were enrolled finds them without waiting for the periodic sync.
func (n *Node) SetMirrorSync(m MirrorSync) {
	if m == nil {
		n.mirror.Store(nil)
		return
	}
	n.mirror.Store(&m)
}

// refreshNodes runs one node sync pass for the decider (decide.go);
// without a MirrorSync it does nothing.
func (n *Node) refreshNodes(ctx context.Context) error {
	m := n.mirror.Load()
	if m == nil {
		return nil
	}
	start := time.Now()
	err := (*m).SyncOnce(ctx)
	if err != nil {
		n.log.Warn("refreshing the Ironic node mirror for a boot that found no node failed; the boot is decided on the mirror as it is", "err", err)
		return err
	}
	n.log.Info("refreshed the Ironic node mirror for a boot that found no node", "took", time.Since(start).Round(time.Millisecond))
	return nil
}
