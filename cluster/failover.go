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
// owns servers. The rules are the judge's (judge.go); this file gathers
// the judge's inputs, commits its verdicts and keeps the metrics.
type failover struct {
	mem    judgeMemory
	frozen bool
	health int             // the health score the last judgement applied
	stuck  map[string]bool // hosts whose servers had nowhere to go (logged once)
	live   *liveness       // the leader's probes (liveness.go); nil: none
	ears   *hearing        // the leader's pings (hearing.go); nil: none
	// next is when the earliest pending grace runs out (zero: none), so
	// that the leader loop reconciles then rather than on its next tick.
	next time.Time
}

func newFailover(since time.Time, live *liveness, ears *hearing) *failover {
	return &failover{mem: judgeMemory{since: since, nominated: map[string]time.Time{}, downAt: map[string]time.Time{}},
		stuck: map[string]bool{}, live: live, ears: ears}
}

// judgeSettings are this peer's failover settings.
func (n *Node) judgeSettings() judgeSettings {
	return judgeSettings{downGrace: n.cfg.DownGrace, silentGrace: n.cfg.SilentGrace, upGrace: n.cfg.UpGrace,
		refusedGrace: n.cfg.RefusedGrace, deadGrace: n.cfg.DeadGrace, detectWindow: n.gossipDetectWindow(),
		freeze: n.cfg.FreezeFraction}
}

// reconcileHosts keeps the log's host list in step with gossip and the
// leader's probes: it shows the judge what this peer sees, commits the
// membership changes it rules, then the deaths it confirms (or reports
// the freeze).
func (n *Node) reconcileHosts(ctx context.Context, members []memberState, fo *failover) error {
	refused, back := fo.live.snapshot()
	hosts := n.store.Hosts()
	listening, heard := fo.ears.snapshot(hosts, n.gossip.heard)
	in := judgeInput{now: time.Now(), members: members, hosts: hosts, refused: refused, back: back,
		health: n.gossip.healthScore(), listening: listening, heard: heard, self: n.cfg.Name}
	v := judge(in, n.judgeSettings(), fo.mem)
	fo.next, fo.mem.nominated = v.next, v.nominated
	if v.health != fo.health {
		fo.health = v.health
		n.log.Info("this peer's own gossip health changed: a death only gossip reports is confirmed after down_grace, doubled while this peer is unhealthy", "unhealthy", v.health > 0, "down_grace", v.downGrace)
	}
	for _, nom := range v.nominations {
		if nom.unknown {
			n.log.Warn("host unknown to gossip since this peer became leader; nominated dead", "host", nom.host)
		} else {
			n.log.Warn("host nominated dead by gossip", "host", nom.host, "grace", v.downGrace)
		}
	}
	var errs []error
	for _, u := range v.updates {
		n.log.Info("updating host from gossip", "host", u.host, "command", u.cmd.Type().String())
		if _, err := n.applyLocal(ctx, u.cmd); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", u.host, err))
		}
	}
	if v.frozen {
		if !fo.frozen {
			fo.frozen = true
			n.metrics.freezes.Inc()
			n.log.Error("FAILOVER FROZEN: too many hosts lost at once; this looks like a partition on the leader's side, not a mass death. No host is marked down and no server moves until enough come back (or an operator forces hosts down).",
				"lost", v.lost, "up", v.up, "freeze_fraction", n.cfg.FreezeFraction)
		}
		n.metrics.frozen.Set(1)
		return errors.Join(errs...)
	}
	if fo.frozen {
		fo.frozen = false
		n.log.Warn("failover unfrozen", "lost", v.lost, "up", v.up)
	}
	n.metrics.frozen.Set(0)
	for _, d := range v.downs {
		n.log.Warn("confirming host death", "host", d.host, "dead_for", in.now.Sub(d.since).Round(time.Millisecond), "evidence", d.evidence)
		if _, err := n.applyLocal(ctx, &fsm.SetHostStatus{Name: d.host, Status: fsm.HostDown}); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", d.host, err))
			continue
		}
		n.metrics.detect.Observe(time.Since(d.since).Seconds())
		fo.mem.downAt[d.host] = time.Now()
		delete(fo.mem.nominated, d.host)
	}
	return errors.Join(errs...)
}

// reconcileOwners commits a reassignment plan for each host that is down,
// has left or is drained and still owns live servers (owedPlans).
func (n *Node) reconcileOwners(ctx context.Context, fo *failover) error {
	var errs []error
	load := n.store.HostLoad()
	for _, o := range owedPlans(n.store.Hosts(), load, fo.frozen) {
		if len(n.store.PlanReassign(o.host, n.goneHosts()...)) == 0 {
			if !fo.stuck[o.host] {
				fo.stuck[o.host] = true
				n.log.Error("servers of a host cannot move: no other up, undrained host of its kind", "host", o.host, "servers", load[o.host])
			}
			continue
		}
		delete(fo.stuck, o.host)
		_, v, err := n.applyLocalValue(ctx, &fsm.ReassignServers{From: o.host, Reason: o.reason})
		if err != nil {
			errs = append(errs, fmt.Errorf("reassign servers of %s: %w", o.host, err))
			continue
		}
		moved, _ := v.(int) // Apply answers the number of servers it moved
		n.metrics.reassigned.Add(float64(moved))
		if at, ok := fo.mem.downAt[o.host]; ok {
			n.metrics.plan.Observe(time.Since(at).Seconds())
		}
		n.log.Warn("servers reassigned", "from", o.host, "reason", o.reason, "servers", moved)
	}
	return errors.Join(errs...)
}

// gossipDetectWindow bounds how long gossip may take to notice a dead
// member: a probe, then the suspicion timeout at its longest.
func (n *Node) gossipDetectWindow() time.Duration {
	g := n.cfg.Gossip
	return g.ProbeInterval + g.ProbeTimeout + time.Duration(2*g.SuspicionMult)*g.ProbeInterval
}
