package mirror

import (
	"context"
	"slices"
	"time"

	"github.com/corral-dev/corral/ironic"
)

// changesPage is the page size of the listings of changed nodes: a pass
// that finds nothing changed reads one short page of each.
const changesPage = 100

// listChanged lists the nodes Ironic changed or created since the
// previous pass, from Ironic's own timestamps, so that a pass with
// nothing changed reads a page instead of every node:
//
//   - the nodes by updated_at, newest first, down to the first one not
//     updated since the watermark minus the change margin;
//   - the nodes by created_at, newest first, down to the same bound:
//     Ironic leaves updated_at null until a node's first change, and its
//     pagination drops the nodes whose sort key is null after the first
//     page, so a node created since and never changed is found this way.
//
// Every change bumps updated_at in Ironic (its node lock, taken for any
// change, traits and VIFs included, writes the node). The watermark is
// the time Ironic answered the previous pass's first listing (its Date
// header, on Ironic's clock): a change that pass did not see committed
// after that, so it is stamped at most the commit delay (plus the clock
// differences between Ironic's API and conductor hosts) earlier, which
// the margin covers. corral's clock plays no part.
//
// It returns full when only a full listing is safe: Ironic's database
// sorts nulls first in a descending order (PostgreSQL) and some node was
// never updated, so the changed nodes come after every such node and the
// pagination skips some of them.
func (s *NodeSync) listChanged(ctx context.Context, p *pass) (asOf time.Time, full bool, err error) {
	since := s.watermark.Add(-s.cfg.ChangeMargin)
	visit := func(n ironic.Node) error { return p.observe(ctx, n) }
	first, nullFirst := true, false
	asOf, err = s.ir.VisitNodes(ctx, ironic.ListOptions{SortKey: ironic.SortByUpdatedAt, SortDir: ironic.SortDesc,
		Limit: changesPage, Until: func(n ironic.Node) bool {
			if first {
				first, nullFirst = false, n.UpdatedAt.IsZero()
			}
			return n.UpdatedAt.IsZero() || n.UpdatedAt.Before(since)
		}}, visit)
	if err != nil {
		return time.Time{}, false, err
	}
	if nullFirst {
		// Either no node was ever updated, or nulls sort first: the first
		// node in ascending order tells. (The listing above stopped at its
		// first node: it visited none.)
		updatedOnce := false
		if _, err := s.ir.VisitNodes(ctx, ironic.ListOptions{SortKey: ironic.SortByUpdatedAt, SortDir: ironic.SortAsc,
			Limit: 1, Until: func(n ironic.Node) bool { updatedOnce = !n.UpdatedAt.IsZero(); return true }},
			func(ironic.Node) error { return nil }); err != nil {
			return time.Time{}, false, err
		}
		if updatedOnce {
			s.log.Debug("Ironic sorts never-updated nodes first: listing every node")
			return time.Time{}, true, nil
		}
	}
	if _, err := s.ir.VisitNodes(ctx, ironic.ListOptions{SortKey: ironic.SortByCreatedAt, SortDir: ironic.SortDesc,
		Limit: changesPage, Until: func(n ironic.Node) bool { return n.CreatedAt.Before(since) }}, visit); err != nil {
		return time.Time{}, false, err
	}
	return asOf, false, nil
}

// nextWatermark is the watermark after a pass that listed nodes whose
// latest created_at or updated_at is latest, Ironic answering its first
// listing at asOf. Without a Date header from Ironic it is latest (and,
// after a pass of changes, at least the previous watermark): the latest
// change stays relisted until a newer one; a brief full pass lists no
// timestamps, so the pass after it is a full one too. A node stamped later
// than asOf by more than the margin means Ironic's hosts disagree on the
// time: it is logged, and the changes the passes miss for it wait for the
// next full pass.
func (s *NodeSync) nextWatermark(asOf, latest time.Time, full bool) time.Time {
	if asOf.IsZero() {
		if !full && s.watermark.After(latest) {
			return s.watermark
		}
		return latest
	}
	if ahead := latest.Sub(asOf); ahead > s.cfg.ChangeMargin && (s.aheadLogged.IsZero() || s.now().Sub(s.aheadLogged) >= s.cfg.FullSyncInterval) {
		s.aheadLogged = s.now() // once per full sync interval, not at every pass
		s.log.Warn("an Ironic node was stamped later than Ironic's API clock by more than the node sync's change margin: synchronize the clocks of Ironic's hosts; until then its changes may wait for the next full sync",
			"ahead", ahead.Round(time.Second), "margin", s.cfg.ChangeMargin)
	}
	return asOf
}

// latestChange is the latest of w and n's created_at and updated_at.
func latestChange(w time.Time, n ironic.Node) time.Time {
	if n.UpdatedAt.After(w) {
		w = n.UpdatedAt
	}
	if n.CreatedAt.After(w) {
		w = n.CreatedAt
	}
	return w
}

// held reports whether the reaper looks at the node: reserved by an
// allocation or an instance, or deployed.
func held(n ironic.Node) bool {
	return n.InstanceUUID != "" || n.AllocationUUID != "" || slices.Contains(deployedStates, n.ProvisionState)
}

// forgetPasses drops what the passes of this peer's term left: the next
// term starts with a full pass.
func (s *NodeSync) forgetPasses() {
	s.pass.Lock()
	defer s.pass.Unlock()
	s.watermark = time.Time{}
	clear(s.held)
	clear(s.conflicted)
}
