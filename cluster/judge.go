package cluster

import (
	"maps"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// The failover judge: a pure function from what the leader sees (gossip's
// members, the log's hosts, the refusals its probes met, what it heard
// from each host, its own gossip health, the clock) and what it remembers
// of this leadership to verdicts: the hosts to register, take back up or mark left, the deaths
// to confirm, or a freeze. It reads no clock, commits nothing and logs
// nothing; the leader loop (failover.go) gathers its inputs, commits its
// verdicts and keeps the metrics. docs/failover.md states its rules, and
// judge_test.go holds it to each of them.

// judgeInput is what the leader sees at one reconcile.
type judgeInput struct {
	now     time.Time
	members []memberState        // admitted members, as this peer's gossip sees them
	hosts   []fsm.Host           // the log's hosts
	refused map[string]refusals  // hosts in a run of refused probes (liveness.go)
	back    map[string]time.Time // when a host that had refused accepted connections again
	health  int                  // this peer's gossip health score (Lifeguard): 0 is healthy
	// listening is when this leader began to ping the hosts itself (zero:
	// it does not), heard when it last heard from each other host
	// (hearing.go); self is this leader's own host.
	listening time.Time
	heard     map[string]time.Time
	self      string
}

// judgeSettings are the failover settings the judge applies.
type judgeSettings struct {
	downGrace    time.Duration // gossip's word alone is confirmed after it (doubled while this peer is unhealthy)
	silentGrace  time.Duration // gossip's word is confirmed once this leader has heard nothing from the host for it; negative: not used
	upGrace      time.Duration // continuous life a returning host needs
	refusedGrace time.Duration // refusals are confirmed after it; negative: refusals are not used
	deadGrace    time.Duration // a host unknown to gossip since the leadership began is nominated after it
	detectWindow time.Duration // how long gossip may take to notice a death
	freeze       float64       // share of up hosts lost at once that freezes failover
}

// judgeMemory is what the judge remembers within one leadership.
type judgeMemory struct {
	since     time.Time            // this leadership began
	nominated map[string]time.Time // host → when its death was nominated
	downAt    map[string]time.Time // host → when this leadership committed it down
}

// verdicts are the judge's answer.
type verdicts struct {
	// updates are committed first, in gossip's order: hosts to register
	// (new, back up, or with new addresses) and hosts that left.
	updates []hostUpdate
	// downs are the deaths to confirm (none while frozen), in order.
	downs []death
	// nominations are the deaths nominated at this reconcile, for the log.
	nominations []nomination
	// nominated is the judge's memory of nominations after this reconcile.
	nominated map[string]time.Time
	// frozen: too many hosts lost at once; nobody is marked down.
	frozen   bool
	lost, up int
	// health is the health score applied (capped) and downGrace the
	// grace it gave gossip's word.
	health    int
	downGrace time.Duration
	// next is when the earliest pending grace runs out (zero: none): the
	// leader reconciles then rather than on its next tick.
	next time.Time
}

// hostUpdate is a membership change to commit.
type hostUpdate struct {
	host string
	cmd  fsm.Command
}

// death is a confirmed death: the host to mark down, when its death was
// nominated, and the evidence (gossip's word, alone or with the leader's
// own silence, or connections refused).
type death struct {
	host     string
	since    time.Time
	evidence string
}

// nomination is a death nominated at this reconcile: by gossip, or
// because gossip has not known the host since the leadership began.
type nomination struct {
	host    string
	unknown bool
}

// Evidence of a death.
const (
	evidenceGossip  = "gossip"
	evidenceSilent  = "gossip, and silent to the leader"
	evidenceRefused = "connections refused"
)

// freezeWindow is how far back confirmed deaths count towards a mass loss.
const freezeWindow = 10 * time.Second

// maxHealthStretch caps the health score by which an unhealthy leader
// stretches DownGrace: at most 2 × DownGrace, so that a leader on a loaded
// machine still confirms a real death in bounded time.
const maxHealthStretch = 1

// judge applies the failover rules. With hysteresis: a dead member is
// marked down once the leader has not heard from it for the silent grace
// either (while the leader is healthy and listens), else only after the
// down grace; a returning one up only after the
// up grace of continuous life (and no sooner than that after it was
// marked down or left); departed members are marked left at once. A host
// unknown to gossip since this leadership began is nominated after the
// dead grace. A host whose raft and gossip ports both refuse connections
// (its process is gone) is confirmed after the refused grace instead,
// whether or not gossip has noticed yet; while it refuses, it is not taken
// back up. When more than the freeze share of the up hosts is lost at
// once, nobody is marked down.
func judge(in judgeInput, set judgeSettings, mem judgeMemory) verdicts {
	v := verdicts{nominated: maps.Clone(mem.nominated)}
	if v.nominated == nil {
		v.nominated = map[string]time.Time{}
	}
	now := in.now
	due := func(t time.Time) {
		if v.next.IsZero() || t.Before(v.next) {
			v.next = t
		}
	}
	// refusal reports whether host has refused connections on both its
	// ports over at least the refused grace, with no connection accepted
	// in between, and when that run began. A run not long enough yet is
	// due when it may be.
	refusal := func(host string) (since time.Time, confirmed, inRun bool) {
		if set.refusedGrace < 0 {
			return time.Time{}, false, false
		}
		run, inRun := in.refused[host]
		if !inRun {
			return time.Time{}, false, false
		}
		if run.last.Sub(run.first) >= set.refusedGrace {
			return run.first, true, true
		}
		due(later(run.first.Add(set.refusedGrace), now.Add(livenessProbeEvery)))
		return run.first, false, true
	}
	// A leader that is itself unhealthy in gossip (its own probes go
	// unanswered: it may be the slow one) trusts gossip's verdicts less and
	// waits longer before acting on them; refusals are not gossip's.
	v.health = min(max(in.health, 0), maxHealthStretch)
	v.downGrace = set.downGrace * time.Duration(1+v.health)
	// A healthy leader that pings the hosts itself judges gossip's word by
	// its own ears: a host silent to it for the silent grace is dead at
	// once; one it still hears waits for the down grace, as on gossip's
	// word alone.
	listens := set.silentGrace >= 0 && !in.listening.IsZero() && v.health == 0
	evidence := map[string]string{}

	hosts := make(map[string]fsm.Host, len(in.hosts))
	for _, h := range in.hosts {
		hosts[h.Name] = h
	}
	// status is each host's status once the updates are committed.
	status := map[string]fsm.HostStatus{}
	update := func(name string, cmd fsm.Command, st fsm.HostStatus) {
		v.updates = append(v.updates, hostUpdate{host: name, cmd: cmd})
		status[name] = st
	}
	seen := map[string]bool{}
	lost := map[string]bool{} // the hosts counted in v.lost
	judging := false          // a host up in the log is nominated dead
	lose := func(name string) {
		v.lost++
		lost[name] = true
	}
	var candidates []string
	for _, m := range in.members {
		seen[m.Name] = true
		h, known := hosts[m.Name]
		switch m.Status {
		case MemberAlive:
			if known {
				since, confirmed, inRun := refusal(m.Name)
				if inRun && h.Status != fsm.HostUp {
					continue // gone, whatever gossip still says
				}
				if inRun {
					lose(m.Name)
					judging = true
					if _, ok := v.nominated[m.Name]; !ok {
						v.nominated[m.Name] = since
					}
					if confirmed {
						candidates = append(candidates, m.Name)
					}
					continue
				}
			}
			delete(v.nominated, m.Name)
			if m.Meta.RaftAddr == "" {
				continue
			}
			reg := &fsm.RegisterHost{Name: m.Name, RaftAddr: m.Meta.RaftAddr, APIAddr: m.Meta.APIAddr,
				GossipAddr: m.Addr, Kind: m.Meta.Kind}
			switch {
			case !known:
				update(m.Name, reg, fsm.HostUp)
			case h.Status != fsm.HostUp:
				if returned(m, h, in.back, now, set, mem.since) {
					update(m.Name, reg, fsm.HostUp)
				}
			case h.RaftAddr != m.Meta.RaftAddr || h.APIAddr != m.Meta.APIAddr || h.GossipAddr != m.Addr || h.Kind != m.Meta.Kind:
				update(m.Name, reg, fsm.HostUp)
			}
		case MemberDead:
			if !known || h.Status != fsm.HostUp {
				continue
			}
			lose(m.Name)
			judging = true
			nom, ok := v.nominated[m.Name]
			if !ok {
				nom = later(m.Changed, mem.since)
				v.nominated[m.Name] = nom
				v.nominations = append(v.nominations, nomination{host: m.Name})
			}
			_, confirmed, _ := refusal(m.Name)
			switch heard := later(in.heard[m.Name], in.listening); {
			case confirmed:
				candidates = append(candidates, m.Name)
			case listens && now.Sub(heard) >= set.silentGrace:
				candidates = append(candidates, m.Name)
				evidence[m.Name] = evidenceSilent
			case now.Sub(nom) >= v.downGrace:
				candidates = append(candidates, m.Name)
			case listens:
				due(heard.Add(set.silentGrace))
				due(nom.Add(v.downGrace))
			default:
				due(nom.Add(v.downGrace))
			}
		case MemberLeft:
			if known && h.Status != fsm.HostLeft {
				update(m.Name, &fsm.SetHostStatus{Name: m.Name, Status: fsm.HostLeft}, fsm.HostLeft)
			}
		}
	}
	// The hosts as they stand once the updates are committed: those
	// registered now count as up.
	for name, st := range status {
		if _, ok := hosts[name]; !ok && st == fsm.HostUp {
			v.up++
		}
	}
	for _, h := range in.hosts {
		st := h.Status
		if s, ok := status[h.Name]; ok {
			st = s
		}
		if st == fsm.HostDown {
			// Deaths confirmed moments ago count as lost "at once" with the
			// ones still being judged: gossip notices simultaneous deaths a
			// little apart.
			if at, ok := mem.downAt[h.Name]; ok && now.Sub(at) < freezeWindow {
				lose(h.Name)
				v.up++
			}
			continue
		}
		if st != fsm.HostUp {
			continue
		}
		v.up++
		if seen[h.Name] || now.Sub(mem.since) < set.deadGrace {
			continue
		}
		lose(h.Name)
		judging = true
		if _, ok := v.nominated[h.Name]; !ok {
			v.nominated[h.Name] = mem.since
			v.nominations = append(v.nominations, nomination{host: h.Name, unknown: true})
		}
		candidates = append(candidates, h.Name)
	}
	// The hosts this leader has not heard for about the silent grace (one
	// ping less: the pings of hosts lost together are up to a ping apart)
	// count as lost at once with those being judged, though gossip has not
	// reported them yet: gossip reports simultaneous deaths a little
	// apart, and a death confirmed on silence waits for no grace in which
	// the others would show. Silence alone is not a loss, nor is it while
	// only deaths already confirmed count.
	if listens && judging {
		for _, h := range in.hosts {
			st, ok := status[h.Name]
			if !ok {
				st = h.Status
			}
			if h.Name == in.self || st != fsm.HostUp || lost[h.Name] {
				continue
			}
			if now.Sub(later(in.heard[h.Name], in.listening)) >= set.silentGrace-hearingPingEvery {
				lose(h.Name)
			}
		}
	}
	if v.lost > 0 && float64(v.lost) > set.freeze*float64(v.up) {
		v.frozen = true
		return v
	}
	for _, name := range candidates {
		ev := evidenceGossip
		if e, ok := evidence[name]; ok {
			ev = e
		}
		if _, confirmed, _ := refusal(name); confirmed {
			ev = evidenceRefused
		}
		v.downs = append(v.downs, death{host: name, since: v.nominated[name], evidence: ev})
	}
	return v
}

// returned reports whether a host out of service that gossip sees alive
// has lived the up grace since it went out of service. Life gossip
// reports from before that (a host forced down while gossip has not
// noticed it dead yet) counts only once gossip had time to notice: a
// killed host never comes back on stale news, a live host forced down
// does. A host seen to restart (its ports refused, then accepted
// connections again) has lived since it accepted them. Nothing counts
// from before this leadership began.
func returned(m memberState, h fsm.Host, back map[string]time.Time, now time.Time, set judgeSettings, since time.Time) bool {
	from := later(m.Changed, since)
	grace := set.upGrace
	restartedAt, restarted := back[m.Name]
	switch {
	case restarted && restartedAt.After(h.ChangedAt):
		from = later(later(restartedAt, m.Changed), since)
	case !m.Changed.After(h.ChangedAt):
		from, grace = later(h.ChangedAt, since), set.upGrace+set.detectWindow
	}
	return now.Sub(from) >= grace
}

// owed is a host whose servers must move, and why.
type owed struct {
	host   string
	reason string
}

// owedPlans are the hosts that are down, have left or are drained and
// still own live servers (load: live servers per host), in the hosts'
// order; none while failover is frozen (drains are held too).
func owedPlans(hosts []fsm.Host, load map[string]int, frozen bool) []owed {
	if frozen {
		return nil
	}
	var out []owed
	for _, h := range hosts {
		reason := ""
		switch {
		case h.Status == fsm.HostDown:
			reason = fsm.ReasonHostDown
		case h.Status == fsm.HostLeft:
			reason = reasonHostLeft
		case h.Drained:
			reason = fsm.ReasonDrain
		}
		if reason != "" && load[h.Name] > 0 {
			out = append(out, owed{host: h.Name, reason: reason})
		}
	}
	return out
}

// reasonHostLeft is the owner reason of servers moved off a departed host.
const reasonHostLeft = "host left"

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
