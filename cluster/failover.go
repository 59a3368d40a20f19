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
	health    int             // this peer's gossip health score at the last reconcile
	stuck     map[string]bool // hosts whose servers had nowhere to go (logged once)
	live      *liveness       // the leader's probes (liveness.go); nil: none
	// next is when the earliest pending grace runs out (zero: none), so
	// that the leader loop reconciles then rather than on its next tick.
	next time.Time
}

// freezeWindow is how far back confirmed deaths count towards a mass loss.
const freezeWindow = 10 * time.Second

// maxHealthStretch caps the health score by which an unhealthy leader
// stretches DownGrace: at most 2 × DownGrace, so that a leader on a loaded
// machine still confirms a real death in bounded time.
const maxHealthStretch = 1

func newFailover(since time.Time, live *liveness) *failover {
	return &failover{since: since, nominated: map[string]time.Time{}, downAt: map[string]time.Time{}, stuck: map[string]bool{}, live: live}
}

// due records t as a time the leader loop must reconcile at.
func (fo *failover) due(t time.Time) {
	if fo.next.IsZero() || t.Before(fo.next) {
		fo.next = t
	}
}

// refused reports whether host has refused connections on both its raft
// and gossip ports over at least RefusedGrace, with no connection accepted
// in between (the leader's second signal, liveness.go), and when that run
// began. A run not long enough yet schedules a reconcile for when it may be.
func (n *Node) refused(fo *failover, host string, now time.Time) (since time.Time, confirmed, inRun bool) {
	if n.cfg.RefusedGrace < 0 {
		return time.Time{}, false, false
	}
	run, inRun := fo.live.refusedRun(host)
	if !inRun {
		return time.Time{}, false, false
	}
	if run.last.Sub(run.first) >= n.cfg.RefusedGrace {
		return run.first, true, true
	}
	fo.due(later(run.first.Add(n.cfg.RefusedGrace), now.Add(livenessProbeEvery)))
	return run.first, false, true
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
//
// A host whose raft and gossip ports both refuse connections (its process
// is gone, liveness.go) is confirmed after RefusedGrace instead, whether
// or not gossip has noticed yet; while it refuses, it is not taken back up.
func (n *Node) reconcileHosts(ctx context.Context, members []memberState, fo *failover) error {
	now := time.Now()
	fo.next = time.Time{}
	// A leader that is itself unhealthy in gossip (its own probes go
	// unanswered: it may be the slow one) trusts gossip's verdicts less and
	// waits longer before acting on them; refusals are not gossip's.
	health := min(n.gossip.healthScore(), maxHealthStretch)
	downGrace := n.cfg.DownGrace * time.Duration(1+health)
	if health != fo.health {
		fo.health = health
		n.log.Info("this peer's own gossip health changed: a death only gossip reports is confirmed after down_grace, doubled while this peer is unhealthy", "unhealthy", health > 0, "down_grace", downGrace)
	}
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
			if known {
				since, confirmed, inRun := n.refused(fo, m.Name, now)
				if inRun && h.Status != fsm.HostUp {
					continue // gone, whatever gossip still says
				}
				if inRun {
					lost++
					if _, ok := fo.nominated[m.Name]; !ok {
						fo.nominated[m.Name] = since
					}
					if confirmed {
						candidates = append(candidates, m.Name)
					}
					continue
				}
			}
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
				// A host seen to restart (its ports refused, then accepted
				// connections again) has lived since it accepted them.
				since := later(m.Changed, fo.since)
				grace := n.cfg.UpGrace
				back, restarted := fo.live.backSince(m.Name)
				switch {
				case restarted && back.After(h.ChangedAt):
					since = later(later(back, m.Changed), fo.since)
				case !m.Changed.After(h.ChangedAt):
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
				n.log.Warn("host nominated dead by gossip", "host", m.Name, "grace", downGrace)
			}
			_, confirmed, _ := n.refused(fo, m.Name, now)
			if confirmed || now.Sub(nom) >= downGrace {
				candidates = append(candidates, m.Name)
			} else {
				fo.due(nom.Add(downGrace))
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
		evidence := "gossip"
		if _, confirmed, _ := n.refused(fo, name, now); confirmed {
			evidence = "connections refused"
		}
		n.log.Warn("confirming host death", "host", name, "dead_for", now.Sub(nom).Round(time.Millisecond), "evidence", evidence)
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
		_, v, err := n.applyLocalValue(ctx, &fsm.ReassignServers{From: h.Name, Reason: reason})
		if err != nil {
			errs = append(errs, fmt.Errorf("reassign servers of %s: %w", h.Name, err))
			continue
		}
		moved, _ := v.(int) // Apply answers the number of servers it moved
		n.metrics.reassigned.Add(float64(moved))
		if at, ok := fo.downAt[h.Name]; ok {
			n.metrics.plan.Observe(time.Since(at).Seconds())
		}
		n.log.Warn("servers reassigned", "from", h.Name, "reason", reason, "servers", moved)
	}
	return errors.Join(errs...)
}

// gossipDetectWindow bounds how long gossip may take to notice a dead
// member: a probe, then the suspicion timeout at its longest.
func (n *Node) gossipDetectWindow() time.Duration {
	g := n.cfg.Gossip
	return g.ProbeInterval + g.ProbeTimeout + time.Duration(2*g.SuspicionMult)*g.ProbeInterval
}
