package mirror

import (
	"context"
	"slices"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// reap removes what Ironic still holds for servers deleted a while ago:
// an allocation or instance_uuid a fenced owner created after the delete,
// or a node left deployed. A deleted server never comes back, so acting on
// its leftovers needs no owner.
func (s *NodeSync) reap(ctx context.Context, nodes []ironic.Node) {
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
		if err != nil || srv.Status != fsm.StatusDeleted || s.now().Sub(srv.UpdatedAt) < s.cfg.ReapAfter {
			continue
		}
		var rerr error
		switch n.ProvisionState {
		case ironic.StateAvailable, "manageable", "enroll":
			if n.AllocationUUID != "" {
				rerr = s.ir.DeleteAllocation(ctx, n.AllocationUUID)
			}
			if rerr == nil && n.InstanceUUID != "" {
				rerr = s.ir.ReleaseNode(ctx, n.UUID, n.InstanceUUID)
			}
		case ironic.StateActive, ironic.StateDeployFailed, ironic.StateError:
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

// deployedStates are the provision states of a node that is, or is
// becoming, deployed.
var deployedStates = []string{ironic.StateActive, ironic.StateDeploying, ironic.StateWaitCallBack, ironic.StateDeployFailed}

// undeployable are the deployed states Ironic lets a node leave by
// undeploying; a node still deploying is looked at again at the next sync.
var undeployable = []string{ironic.StateActive, ironic.StateWaitCallBack, ironic.StateDeployFailed}

// orphan reports whether a node is deployed for nobody: no allocation and
// no instance_uuid hold it. corral always reserves a node before it
// deploys it, so such a node was deployed by an owner that had lost it
// (a host paused between its checks and its deploy).
func orphan(n ironic.Node) bool {
	return n.AllocationUUID == "" && n.InstanceUUID == "" && !n.Maintenance &&
		slices.Contains(deployedStates, n.ProvisionState)
}

// reapOrphans undeploys the nodes this leader has seen deployed for
// nobody, at every sync, for longer than OrphanGrace. The grace is
// measured on the leader's clock across its own syncs; a new leader
// starts counting afresh.
func (s *NodeSync) reapOrphans(ctx context.Context, nodes []ironic.Node) {
	if s.cfg.OrphanGrace < 0 {
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	current := map[string]bool{}
	for _, n := range nodes {
		if !orphan(n) {
			continue
		}
		current[n.UUID] = true
		first, ok := s.orphanAt[n.UUID]
		if !ok {
			s.orphanAt[n.UUID] = now
			s.log.Info("Ironic node is deployed with neither an allocation nor an instance_uuid; it is undeployed unless one appears",
				"node", n.UUID, "state", n.ProvisionState, "grace", s.cfg.OrphanGrace)
			continue
		}
		if now.Sub(first) < s.cfg.OrphanGrace || !slices.Contains(undeployable, n.ProvisionState) {
			continue
		}
		if err := s.ir.Undeploy(ctx, n.UUID); err != nil {
			s.log.Warn("undeploying a node deployed for nobody failed; retrying at the next sync", "node", n.UUID, "err", err)
			continue
		}
		delete(s.orphanAt, n.UUID)
		s.orphans.Inc()
		s.log.Warn("undeployed an Ironic node deployed for nobody", "node", n.UUID, "state", n.ProvisionState,
			"image", n.InstanceInfo["image_source"], "display_name", n.InstanceInfo["display_name"], "seen_for", now.Sub(first).Round(time.Millisecond))
	}
	for id := range s.orphanAt {
		if !current[id] {
			delete(s.orphanAt, id)
		}
	}
}

// forgetOrphans drops what this peer observed while it led.
func (s *NodeSync) forgetOrphans() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.orphanAt)
}
