package mirror

import (
	"context"
	"slices"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// pass is one sync pass as its listings stream in: each node listed is
// compared with the mirror where it stands (no copy of the mirror), the
// changed ones are committed maxSyncBatch at a time as they come, and the
// pass keeps only what its end needs: the nodes it saw (a full pass, to
// mark the others missing), the reaper's nodes and the latest change.
// A listing of 10^5 nodes thus costs the leader a page and a batch of
// nodes at a time, not the whole listing, a copy of the mirror and the
// changes on top.
//
// Nothing of a pass that fails is lost or wrong: the entries it committed
// hold what Ironic showed; nodes are marked missing, the reaper's nodes
// replaced and the watermark moved only by a pass whose listings all
// completed.
type pass struct {
	s      *NodeSync
	store  *fsm.Store
	full   bool
	legacy bool // the legacy inventory switch to commit
	// first: no entry was committed yet; the first carries the legacy
	// switch, and is committed even without changes when the switch
	// changes or a node holds a refused inventory (retry).
	first, retry bool

	pending []fsm.Node     // changed nodes not committed yet
	at      map[string]int // node → its index in pending

	seen    map[string]struct{}    // full: every node listed
	held    map[string]ironic.Node // the reaper's nodes listed: every one (full) or the changes (with a zero node for one no longer held)
	latest  time.Time              // the latest created_at or updated_at listed
	entries int                    // entries committed
}

func (s *NodeSync) newPass(store *fsm.Store, full bool) *pass {
	p := &pass{s: s, store: store, full: full, legacy: s.legacyInventory(store), first: true,
		at: map[string]int{}, held: map[string]ironic.Node{}}
	if full {
		p.seen = map[string]struct{}{}
		// A full pass reads every node: it starts from the conflicts the
		// mirror holds.
		clear(s.conflicted)
		for _, id := range store.ConflictedNodeIDs() {
			s.conflicted[id] = true
		}
		p.retry = len(s.conflicted) > 0
		return p
	}
	for id := range s.conflicted {
		if reason, _, ok := store.NodeConflict(id); ok && reason != "" {
			p.retry = true
			continue
		}
		delete(s.conflicted, id)
	}
	return p
}

// observe takes one node of a listing: it commits the pending changes
// once they fill an entry.
func (p *pass) observe(ctx context.Context, n ironic.Node) error {
	p.latest = latestChange(p.latest, n)
	if p.full {
		p.seen[n.UUID] = struct{}{}
	}
	p.hold(n)
	m := mirrorNode(n)
	if i, ok := p.at[m.UUID]; ok {
		// Listed twice (in both listings of changes, or on two pages when
		// it changed while they were read): the later is the newer
		// observation.
		p.pending[i] = m
		return nil
	}
	if p.store.NodeObserved(m) {
		return nil
	}
	p.at[m.UUID] = len(p.pending)
	p.pending = append(p.pending, m)
	if len(p.pending) < maxSyncBatch {
		return nil
	}
	return p.commit(ctx, nil)
}

// hold notes a node for the reaper: reserved or deployed nodes, stripped
// of what it does not read; a pass of changes also notes the nodes the
// reaper holds that no longer need it.
func (p *pass) hold(n ironic.Node) {
	if !held(n) {
		if _, ok := p.s.held[n.UUID]; ok && !p.full {
			p.held[n.UUID] = ironic.Node{}
		} else {
			delete(p.held, n.UUID)
		}
		return
	}
	p.held[n.UUID] = ironic.Node{UUID: n.UUID, ProvisionState: n.ProvisionState, Maintenance: n.Maintenance,
		InstanceUUID: n.InstanceUUID, AllocationUUID: n.AllocationUUID,
		InstanceInfo: map[string]string{"image_source": n.InstanceInfo["image_source"], "display_name": n.InstanceInfo["display_name"]}}
}

// finish commits what the pass has left once its listings completed: the
// pending changes, the nodes a full pass did not see (marked missing), and
// the first entry when the legacy switch or a refused inventory needs one.
func (p *pass) finish(ctx context.Context) error {
	var missing []string
	if p.full {
		for _, id := range p.store.PresentNodeIDs() {
			if _, ok := p.seen[id]; !ok {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		p.seen = nil
	}
	if len(p.pending) > 0 || len(missing) > 0 || (p.first && (p.retry || p.store.LegacyInventory() != p.legacy)) {
		return p.commit(ctx, missing)
	}
	return nil
}

// commit proposes the pending changes, and missing, as one entry.
func (p *pass) commit(ctx context.Context, missing []string) error {
	cmd := &fsm.SyncNodes{Upserts: p.pending, Missing: missing}
	flips := false
	if p.first {
		legacy := p.legacy
		cmd.LegacyInventory = &legacy
		flips = legacy != p.store.LegacyInventory()
	}
	if _, err := p.s.c.Propose(ctx, cmd); err != nil {
		return err
	}
	p.first = false
	p.entries++
	p.s.reportConflicts(cmd, flips)
	if len(cmd.Upserts)+len(cmd.Missing) > 0 {
		p.s.log.Debug("node mirror updated", "changed", len(cmd.Upserts), "missing", len(cmd.Missing), "full", p.full)
	}
	p.pending = make([]fsm.Node, 0, maxSyncBatch) // the entry may still be read
	clear(p.at)
	return nil
}

// keepHeld makes the reaper's nodes those the pass listed: all of them
// after a full pass, updated after one of changes.
func (p *pass) keepHeld() {
	if p.full {
		p.s.held = p.held
		return
	}
	for id, n := range p.held {
		if n.UUID == "" {
			delete(p.s.held, id)
		} else {
			p.s.held[id] = n
		}
	}
}

// mirrorNode converts an Ironic node to its mirror entry. Its maps are
// taken, not copied: the node is the listing's, which drops it, and the
// state keeps copies of its own.
func mirrorNode(n ironic.Node) fsm.Node {
	traits := n.Traits
	if !slices.IsSorted(traits) {
		traits = slices.Sorted(slices.Values(traits))
	}
	return fsm.Node{UUID: n.UUID, Name: n.Name, ResourceClass: n.ResourceClass, ProvisionState: n.ProvisionState,
		PowerState: n.PowerState, Maintenance: n.Maintenance, Properties: n.Properties,
		Capabilities: n.Capabilities, Traits: traits, InstanceUUID: n.InstanceUUID,
		AllocationUUID: n.AllocationUUID}
}
