package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/sched"
	"github.com/corral-dev/corral/ironic"
)

// Build takes a BUILD server through reserve → deploy; the manager then
// commits ACTIVE. Every step first reads what Ironic already has, so a
// retry or a new owner resumes instead of redoing.
func (d *Driver) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if r, ok := d.w.take(s); ok {
		// The watcher saw this deploy end: active (nil) or failed.
		return r.err
	}
	var err error
	spawning := false // the intent to deploy is committed, at this epoch, by this attempt
	if s.NodeUUID == "" {
		if err = h.Intent(ctx, s, fsm.TaskReserving); err != nil {
			return err
		}
		// The reservation's entry carries the intent to deploy when every
		// peer can apply it: one round trip less per boot.
		if spawning, err = d.reserve(ctx, h, s); err != nil {
			return err
		}
		if s, err = h.Reread(s, true); err != nil {
			return err
		}
	}
	// Otherwise the intent is committed even when the log already says
	// spawning: a host restarted or resumed with a stale replica is fenced
	// here, before it deploys anything.
	if !spawning {
		if err = h.Intent(ctx, s, fsm.TaskSpawning); err != nil {
			return err
		}
	}
	return d.deploy(ctx, h, s)
}

// reserve obtains a node for the server and commits the reservation; it
// reports whether that entry also committed the task state spawning.
func (d *Driver) reserve(ctx context.Context, h *compute.Handle, s fsm.Server) (bool, error) {
	var raw string
	var nodes []fsm.Node
	if s.ClaimedNode != "" {
		// The scheduler claimed this node in Placement: ask Ironic for it
		// alone, so Ironic's allocation and Placement's agree — whatever
		// the flavor says (a flavor without a custom class lands here only
		// through legacy standard inventory).
		n, err := h.Store().Node(s.ClaimedNode)
		if err != nil {
			return false, compute.Permanent("No valid host was found. The claimed Ironic node %s is not in the mirror", s.ClaimedNode)
		}
		if err := claimedNodeFits(n, s.Flavor); err != nil {
			return false, err
		}
		raw, nodes = n.ResourceClass, []fsm.Node{n}
	} else {
		var err error
		if raw, nodes, err = d.candidates(h.Store(), s.Flavor); err != nil {
			return false, err
		}
	}
	if d.mode == ReserveAllocations {
		return d.reserveByAllocation(ctx, h, s, raw, nodes)
	}
	if s.TaskState == fsm.TaskReserving {
		// An earlier attempt, maybe by a previous owner, may have claimed a
		// node the mirror does not show yet: ask Ironic before claiming.
		all, err := d.ir.ListNodes(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range all {
			if n.InstanceUUID == s.ID {
				return h.Reserve(ctx, s, n.UUID, "", fsm.TaskSpawning)
			}
		}
	}
	return d.reserveByInstanceUUID(ctx, h, s, nodes)
}

func (d *Driver) reserveByAllocation(ctx context.Context, h *compute.Handle, s fsm.Server, raw string, nodes []fsm.Node) (bool, error) {
	r, err := request(s.Flavor)
	if err != nil {
		return false, err
	}
	req := ironic.AllocationRequest{UUID: s.ID, Name: ironic.AllocationName(s.ID), ResourceClass: raw, Traits: r.Required,
		Extra: map[string]string{"corral_server": s.ID, "corral_host": s.Host}}
	if len(r.Capabilities) > 0 || len(r.Forbidden) > 0 || s.ClaimedNode != "" {
		// Ironic's allocation engine knows nothing of capabilities: narrow
		// the candidates ourselves.
		if len(nodes) == 0 {
			return false, compute.Permanent("No valid host was found. No Ironic node of class %s has the capabilities %v", raw, r.Capabilities)
		}
		for _, n := range nodes {
			req.CandidateNodes = append(req.CandidateNodes, n.UUID)
		}
	}
	alloc, err := d.ir.CreateAllocation(ctx, req)
	if err != nil {
		return false, err
	}
	if alloc.State == "allocating" {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		alloc, err = d.ir.WaitAllocation(wctx, alloc.UUID)
		cancel()
		if err != nil {
			return false, err
		}
	}
	if alloc.State != "active" || alloc.NodeUUID == "" {
		msg := alloc.LastError
		if msg == "" {
			msg = "allocation ended in state " + alloc.State
		}
		// A failed allocation holds nothing, but it would block a retry
		// under the same uuid; remove it.
		if derr := d.ir.DeleteAllocation(ctx, alloc.UUID); derr != nil {
			d.log.Warn("removing the failed allocation failed", "server", s.ID, "err", derr)
		}
		return false, compute.Permanent("No valid host was found. Ironic: %s", msg)
	}
	if _, err := h.Reread(s, false); err != nil {
		return false, err
	}
	return h.Reserve(ctx, s, alloc.NodeUUID, alloc.UUID, fsm.TaskSpawning)
}

// reserveByInstanceUUID is the deprecated way: claim a node by writing the
// server id into its instance_uuid; Ironic answers 409 to the loser.
func (d *Driver) reserveByInstanceUUID(ctx context.Context, h *compute.Handle, s fsm.Server, nodes []fsm.Node) (bool, error) {
	store := h.Store()
	// A retry first looks for the node it may already have claimed.
	for _, n := range nodes {
		if n.InstanceUUID == s.ID {
			return h.Reserve(ctx, s, n.UUID, "", fsm.TaskSpawning)
		}
	}
	byID := map[string]fsm.Node{}
	var ids []string
	for _, n := range nodes {
		if n.Available() && store.ReservedBy(n.UUID) == "" {
			byID[n.UUID] = n
			ids = append(ids, n.UUID)
		}
	}
	if len(ids) == 0 {
		return false, compute.Permanent("No valid host was found. There are not enough Ironic nodes available that match flavor %s", s.Flavor.Name)
	}
	for _, id := range sched.RankNodes(ids, s.ID) {
		if _, err := h.Reread(s, false); err != nil {
			return false, err
		}
		err := d.ir.ReserveNode(ctx, id, s.ID)
		if errors.Is(err, ironic.ErrConflict) {
			continue // someone else won this node
		}
		if err != nil {
			return false, err
		}
		spawning, cerr := h.Reserve(ctx, s, id, "", fsm.TaskSpawning)
		if errors.Is(cerr, fsm.ErrConflict) && !errors.Is(cerr, fsm.ErrFenced) {
			_ = d.ir.ReleaseNode(ctx, id, s.ID)
			continue
		}
		return spawning, cerr
	}
	return false, compute.Permanent("No valid host was found. Every Ironic node matching flavor %s was taken by another instance", s.Flavor.Name)
}

// deploy writes instance_info and drives the node to active.
func (d *Driver) deploy(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	n, err := d.ir.GetNode(ctx, s.NodeUUID)
	if err != nil {
		return err
	}
	switch n.ProvisionState {
	case "active":
		if n.InstanceUUID == s.ID {
			return nil
		}
		return compute.Permanent("Ironic node %s is active for instance %s, not for this server", n.UUID, n.InstanceUUID)
	case "available":
		if !holds(n, s) {
			// The log says this server holds the node, Ironic says nothing
			// does: the reservation was released behind a stale owner.
			return d.notHeld(h, s, n, "deploying")
		}
		spec := ironic.DeploySpec{ImageSource: s.ImageRef, RootGB: s.Flavor.Disk, DisplayName: s.Name,
			Capabilities: flavorCapabilities(s.Flavor), ConfigDriveData: configDrive(s)}
		if _, err := h.Reread(s, true); err != nil {
			return err
		}
		attached, err := d.attachVIFs(ctx, h, s, n.UUID) // ports.go
		if err != nil {
			return err
		}
		if attached > 0 {
			// The node was read before the VIFs were attached: read it
			// again. Without VIFs the read above, with only local checks
			// since, is the fence.
			if err := d.fence(ctx, h, s, "deploying"); err != nil {
				return err
			}
		}
		if err := d.ir.Deploy(ctx, n.UUID, spec); err != nil {
			if refusedDeploy(err) {
				return compute.Permanent("Ironic refused to deploy image %s on node %s: %v", s.ImageRef, n.UUID, err)
			}
			return err
		}
		n.ProvisionState = ironic.StateDeploying
	case "deploying", "wait call-back", "deploy wait":
	case "deploy failed", "error":
		return compute.Permanent("Deploy of Ironic node %s failed: %s", n.UUID, n.LastError)
	default:
		return fmt.Errorf("Ironic node %s is in provision state %q; waiting", n.UUID, n.ProvisionState)
	}
	if d.cfg.Wait == WaitWatch {
		return d.await(h, s, n.UUID, awaitDeployed, n.ProvisionState)
	}
	wctx, cancel := context.WithTimeout(ctx, d.cfg.DeployTimeout)
	defer cancel()
	if _, err := d.ir.WaitProvisionState(wctx, n.UUID, "active"); err != nil {
		if errors.Is(err, ironic.ErrDeployFailed) {
			return compute.Permanent("Deploy of Ironic node %s failed: %v", n.UUID, err)
		}
		return err
	}
	return nil
}

// refusedDeploy tells a deploy Ironic will never accept (bad input, an
// image it cannot validate) from a transient failure worth retrying.
func refusedDeploy(err error) bool {
	if errors.Is(err, ironic.ErrInvalid) {
		return true
	}
	f := ironic.FaultOf(err)
	return strings.Contains(f, "Validation of") || strings.Contains(f, "image href")
}
