package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// failover is the leader's failure-detection state for one leadership.
// Gossip only nominates a host; the leader confirms the death after
// DownGrace, freezes when too many hosts vanish at once, and commits a
// reassignment plan for every down, departed or drained host that still
// owns servers.
type failover struct {
	since     time.Time            // this leadership began
	nominated map[string]time.Time // host → when its death was nominated
	downAt    map[string]time.Time // host → when this leader committed it down
	frozen    bool
	stuck     map[string]bool // hosts whose servers had nowhere to go (logged once)
}

// freezeWindow is how far back confirmed deaths count towards a mass loss.
const freezeWindow = 10 * time.Second

func newFailover(since time.Time) *failover {
	return &failover{since: since, nominated: map[string]time.Time{}, downAt: map[string]time.Time{}, stuck: map[string]bool{}}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// reconcileHosts keeps the FSM's host list in step with gossip, with
// hysteresis: a dead member is marked down only after DownGrace, a
// returning one up only after UpGrace of continuous life (and no sooner
// than UpGrace after it was marked down or left); departed members
// are marked left at once. A host unknown to gossip since this leadership
// began is nominated after DeadGrace.
func (n *Node) reconcileHosts(ctx context.Context, members []memberState, fo *failover) error {
	now := time.Now()
	var errs []error
	seen := map[string]bool{}
	propose := func(name string, cmd fsm.Command) {
		n.log.Info("updating host from gossip", "host", name, "command", cmd.Type().String())
		if _, err := n.applyLocal(ctx, cmd); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", name, err))
		}
	}
	var candidates []string
	lost := 0
	for _, m := range members {
		seen[m.Name] = true
		h, err := n.store.Host(m.Name)
		known := err == nil
		switch m.Status {
		case MemberAlive:
			delete(fo.nominated, m.Name)
			if m.Meta.RaftAddr == "" {
				continue
			}
			reg := &fsm.RegisterHost{Name: m.Name, RaftAddr: m.Meta.RaftAddr, APIAddr: m.Meta.APIAddr,
				GossipAddr: m.Addr, Kind: m.Meta.Kind}
			switch {
			case !known:
				propose(m.Name, reg)
			case h.Status != fsm.HostUp:
				// Back up after UpGrace of life gossip saw since the host went
				// out of service. Life gossip reports from before that (a host
				// forced down while gossip has not noticed it dead yet) counts
				// only once gossip had time to notice: a killed host never comes
				// back on stale news, a live host forced down does.
				since := later(m.Changed, fo.since)
				grace := n.cfg.UpGrace
				if !m.Changed.After(h.ChangedAt) {
					since, grace = later(h.ChangedAt, fo.since), n.cfg.UpGrace+n.gossipDetectWindow()
				}
				if now.Sub(since) >= grace {
					propose(m.Name, reg)
				}
			case h.RaftAddr != m.Meta.RaftAddr || h.APIAddr != m.Meta.APIAddr || h.GossipAddr != m.Addr || h.Kind != m.Meta.Kind:
				propose(m.Name, reg)
			}
		case MemberDead:
			if !known || h.Status != fsm.HostUp {
				continue
			}
			lost++
			nom, ok := fo.nominated[m.Name]
			if !ok {
				nom = later(m.Changed, fo.since)
				fo.nominated[m.Name] = nom
				n.log.Warn("host nominated dead by gossip", "host", m.Name, "grace", n.cfg.DownGrace)
			}
			if now.Sub(nom) >= n.cfg.DownGrace {
				candidates = append(candidates, m.Name)
			}
		case MemberLeft:
			if known && h.Status != fsm.HostLeft {
				propose(m.Name, &fsm.SetHostStatus{Name: m.Name, Status: fsm.HostLeft})
			}
		}
	}
	up := 0
	for _, h := range n.store.Hosts() {
		if h.Status == fsm.HostDown {
			// Deaths confirmed moments ago count as lost "at once" with the
			// ones still being judged: gossip notices simultaneous deaths a
			// little apart.
			if at, ok := fo.downAt[h.Name]; ok && now.Sub(at) < freezeWindow {
				lost++
				up++
			}
			continue
		}
		if h.Status != fsm.HostUp {
			continue
		}
		up++
		if seen[h.Name] || now.Sub(fo.since) < n.cfg.DeadGrace {
			continue
		}
		lost++
		if _, ok := fo.nominated[h.Name]; !ok {
			fo.nominated[h.Name] = fo.since
			n.log.Warn("host unknown to gossip since this peer became leader; nominated dead", "host", h.Name)
		}
		candidates = append(candidates, h.Name)
	}
	if lost > 0 && float64(lost) > n.cfg.FreezeFraction*float64(up) {
		if !fo.frozen {
			fo.frozen = true
			n.metrics.freezes.Inc()
			n.log.Error("FAILOVER FROZEN: too many hosts lost at once; this looks like a partition on the leader's side, not a mass death. No host is marked down and no server moves until enough come back (or an operator forces hosts down).",
				"lost", lost, "up", up, "freeze_fraction", n.cfg.FreezeFraction)
		}
		n.metrics.frozen.Set(1)
		return errors.Join(errs...)
	}
	if fo.frozen {
		fo.frozen = false
		n.log.Warn("failover unfrozen", "lost", lost, "up", up)
	}
	n.metrics.frozen.Set(0)
	for _, name := range candidates {
		nom := fo.nominated[name]
		n.log.Warn("confirming host death", "host", name, "dead_for", now.Sub(nom).Round(time.Millisecond))
		if _, err := n.applyLocal(ctx, &fsm.SetHostStatus{Name: name, Status: fsm.HostDown}); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", name, err))
			continue
		}
		n.metrics.detect.Observe(time.Since(nom).Seconds())
		fo.downAt[name] = time.Now()
		delete(fo.nominated, name)
	}
	return errors.Join(errs...)
}

// reconcileOwners commits a reassignment plan for each host that is down,
// has left or is drained and still owns live servers.
func (n *Node) reconcileOwners(ctx context.Context, fo *failover) error {
	if fo.frozen {
		return nil
	}
	load := n.store.HostLoad()
	var errs []error
	for _, h := range n.store.Hosts() {
		reason := ""
		switch {
		case h.Status == fsm.HostDown:
			reason = fsm.ReasonHostDown
		case h.Status == fsm.HostLeft:
			reason = "host left"
		case h.Drained:
			reason = fsm.ReasonDrain
		}
		if reason == "" || load[h.Name] == 0 {
			continue
		}
		if len(n.store.PlanReassign(h.Name, n.goneHosts()...)) == 0 {
			if !fo.stuck[h.Name] {
				fo.stuck[h.Name] = true
				n.log.Error("servers of a host cannot move: no other up, undrained host of its kind", "host", h.Name, "servers", load[h.Name])
			}
			continue
		}
		delete(fo.stuck, h.Name)
		cmd := &fsm.ReassignServers{From: h.Name, Reason: reason}
		if _, err := n.applyLocal(ctx, cmd); err != nil {
			errs = append(errs, fmt.Errorf("reassign servers of %s: %w", h.Name, err))
			continue
		}
		n.metrics.reassigned.Add(float64(len(cmd.Moves)))
		if at, ok := fo.downAt[h.Name]; ok {
			n.metrics.plan.Observe(time.Since(at).Seconds())
		}
		n.log.Warn("servers reassigned", "from", h.Name, "reason", reason, "servers", len(cmd.Moves))
	}
	return errors.Join(errs...)
}

// gossipDetectWindow bounds how long gossip may take to notice a dead
// member: a probe, then the suspicion timeout at its longest.
func (n *Node) gossipDetectWindow() time.Duration {
	g := n.cfg.Gossip
	return g.ProbeInterval + g.ProbeTimeout + time.Duration(2*g.SuspicionMult)*g.ProbeInterval
}
