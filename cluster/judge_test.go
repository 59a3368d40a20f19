package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// The failover judge, rule by rule (docs/failover.md). Every case is one
// reconcile of a leader p1 whose leadership began at leadStart; times are
// given from then.

var leadStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ts(d time.Duration) time.Time { return leadStart.Add(d) }

// world is what the leader sees: hosts p1..pN up in the log and alive in
// gossip since long before this leadership, unless a case says otherwise.
type world struct {
	hosts   []fsm.Host
	members []memberState
	refused map[string]refusals
	back    map[string]time.Time
	health  int
	mem     judgeMemory
	// listening and heard are the leader's own pings (hearing.go). A host
	// with no entry in heard answered the latest ping (TestJudge hears it
	// at the case's now), unless silent names it: then it has not
	// answered in this leadership.
	listening time.Time
	heard     map[string]time.Time
	silence   map[string]bool
}

func addrs(name string) (raft, api, gossip string) {
	return name + ":7000", name + ":8774", name + ":7946"
}

func fleet(n int) *world {
	w := &world{refused: map[string]refusals{}, back: map[string]time.Time{}, heard: map[string]time.Time{}, silence: map[string]bool{},
		mem: judgeMemory{since: leadStart, nominated: map[string]time.Time{}, downAt: map[string]time.Time{}}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("p%d", i)
		r, a, g := addrs(name)
		w.hosts = append(w.hosts, fsm.Host{Name: name, RaftAddr: r, APIAddr: a, GossipAddr: g, Kind: fsm.KindIronic,
			Status: fsm.HostUp, ChangedAt: ts(-time.Hour)})
		w.members = append(w.members, memberState{Name: name, Addr: g, Status: MemberAlive,
			Meta: memberMeta{RaftAddr: r, APIAddr: a, Kind: fsm.KindIronic}, Changed: ts(-time.Hour)})
	}
	return w
}

func (w *world) member(name string) *memberState {
	for i := range w.members {
		if w.members[i].Name == name {
			return &w.members[i]
		}
	}
	r, a, g := addrs(name)
	w.members = append(w.members, memberState{Name: name, Addr: g, Meta: memberMeta{RaftAddr: r, APIAddr: a, Kind: fsm.KindIronic}})
	return &w.members[len(w.members)-1]
}

func (w *world) host(name string) *fsm.Host {
	for i := range w.hosts {
		if w.hosts[i].Name == name {
			return &w.hosts[i]
		}
	}
	panic("no host " + name)
}

// dead: gossip has seen name dead since at.
func (w *world) dead(name string, at time.Duration) *world {
	m := w.member(name)
	m.Status, m.Changed = MemberDead, ts(at)
	return w
}

// alive: gossip has seen name alive since at.
func (w *world) alive(name string, at time.Duration) *world {
	m := w.member(name)
	m.Status, m.Changed = MemberAlive, ts(at)
	return w
}

// left: name left gossip cleanly.
func (w *world) left(name string) *world {
	m := w.member(name)
	m.Status, m.Changed = MemberLeft, ts(0)
	return w
}

// unknown: gossip does not know name at all.
func (w *world) unknown(name string) *world {
	w.members = slices.DeleteFunc(w.members, func(m memberState) bool { return m.Name == name })
	return w
}

// status: the log has name in status st since at.
func (w *world) status(name string, st fsm.HostStatus, at time.Duration) *world {
	h := w.host(name)
	h.Status, h.ChangedAt = st, ts(at)
	return w
}

// drained: the log has name drained.
func (w *world) drained(name string) *world {
	w.host(name).Drained = true
	return w
}

// refusing: name's ports refused every probe from first to last.
func (w *world) refusing(name string, first, last time.Duration) *world {
	w.refused[name] = refusals{first: ts(first), last: ts(last)}
	return w
}

// restarted: name accepted connections again at at, after refusing.
func (w *world) restarted(name string, at time.Duration) *world {
	w.back[name] = ts(at)
	return w
}

// listens: the leader has pinged the hosts itself since at.
func (w *world) listens(at time.Duration) *world {
	w.listening = ts(at)
	return w
}

// answered: name last answered the leader's ping at at.
func (w *world) answered(name string, at time.Duration) *world {
	w.heard[name] = ts(at)
	return w
}

// silent: the leader has not heard from name in this leadership.
func (w *world) silent(names ...string) *world {
	for _, name := range names {
		w.silence[name] = true
	}
	return w
}

// heardAt is what the leader (p1, which pings nobody but the others)
// heard from each host at now: what the case says, and the latest ping's
// answer from every other host.
func (w *world) heardAt(now time.Time) map[string]time.Time {
	if w.listening.IsZero() {
		return nil
	}
	heard := maps.Clone(w.heard)
	for _, h := range w.hosts {
		if _, ok := heard[h.Name]; !ok && !w.silence[h.Name] && h.Name != "p1" {
			heard[h.Name] = now
		}
	}
	return heard
}

func (w *world) unhealthy(score int) *world {
	w.health = score
	return w
}

// nominated: this leadership nominated name's death at at.
func (w *world) nominated(name string, at time.Duration) *world {
	w.mem.nominated[name] = ts(at)
	return w
}

// confirmed: this leadership marked name down at at.
func (w *world) confirmed(name string, at time.Duration) *world {
	w.mem.downAt[name] = ts(at)
	return w
}

func (w *world) newMember(name string) *world {
	w.alive(name, 0)
	return w
}

func (w *world) readdress(name string) *world {
	w.member(name).Meta.APIAddr = name + ":9999"
	return w
}

func (w *world) noRaftAddr(name string) *world {
	w.member(name).Meta.RaftAddr = ""
	return w
}

func defaultSettings() judgeSettings {
	return judgeSettings{downGrace: 1500 * time.Millisecond, silentGrace: time.Second, upGrace: time.Second,
		refusedGrace: time.Second, deadGrace: 10 * time.Second, detectWindow: 2 * time.Second, freeze: 0.5}
}

// none marks a case that wants no pending grace.
const none = time.Duration(-1)

type judgeCase struct {
	rule  string
	world *world
	at    time.Duration // now, from leadStart
	set   func(*judgeSettings)

	updates []string // "register pN", "left pN"
	downs   []string // "pN gossip", "pN connections refused"
	frozen  bool
	// nominated, when not nil, is the memory of nominations afterwards.
	nominated map[string]time.Duration
	// next, when not 0, is when the earliest pending grace runs out (none:
	// no grace pending).
	next time.Duration
}

var judgeCases = []judgeCase{
	// Gossip's word, confirmed after down_grace.
	{rule: "a host gossip reports dead is nominated at the time gossip saw it die, and not marked down within down_grace; the leader reconciles when the grace runs out",
		world: fleet(3).dead("p2", 1*time.Second), at: 2 * time.Second,
		nominated: map[string]time.Duration{"p2": time.Second}, next: 2500 * time.Millisecond},
	{rule: "a host still dead down_grace after its nomination is marked down on gossip's word",
		world: fleet(3).dead("p2", time.Second), at: 2500 * time.Millisecond, downs: []string{"p2 gossip"}},
	{rule: "a nomination keeps its time across reconciles: gossip's later change does not restart the grace",
		world: fleet(3).dead("p2", time.Second).nominated("p2", 500*time.Millisecond), at: 2 * time.Second,
		downs: []string{"p2 gossip"}},
	{rule: "a new leader judges nobody on its predecessor's clock: a death gossip saw before this leadership is counted from the leadership's start",
		world: fleet(3).dead("p2", -time.Minute), at: time.Second,
		nominated: map[string]time.Duration{"p2": 0}, next: 1500 * time.Millisecond},
	{rule: "... and confirmed down_grace after the leadership's start",
		world: fleet(3).dead("p2", -time.Minute), at: 1500 * time.Millisecond, downs: []string{"p2 gossip"}},
	{rule: "a leader whose own gossip health is poor (Lifeguard) doubles down_grace before it acts on gossip alone",
		world: fleet(3).dead("p2", 0).unhealthy(1), at: 2 * time.Second, next: 3 * time.Second},
	{rule: "... and marks the host down once the doubled grace ran out",
		world: fleet(3).dead("p2", 0).unhealthy(1), at: 3 * time.Second, downs: []string{"p2 gossip"}},
	{rule: "the stretch is capped: however poor the health, down_grace is at most doubled",
		world: fleet(3).dead("p2", 0).unhealthy(8), at: 3 * time.Second, downs: []string{"p2 gossip"}},
	{rule: "a drained host's death is judged like any other",
		world: fleet(3).drained("p2").dead("p2", 0), at: 1500 * time.Millisecond, downs: []string{"p2 gossip"}},
	{rule: "a dead member the log has down already, or does not know, changes nothing",
		world: fleet(3).status("p2", fsm.HostDown, -time.Hour).dead("p2", -time.Hour).dead("p9", -time.Hour),
		at:    20 * time.Second, nominated: map[string]time.Duration{}, next: none},

	// The leader's own ears: gossip's word with the leader's silence.
	{rule: "a host gossip reports dead that has not answered the leader's pings for silent_grace is marked down at once, without down_grace",
		world: fleet(3).listens(0).answered("p2", 500*time.Millisecond).dead("p2", 2*time.Second), at: 2 * time.Second,
		downs: []string{"p2 gossip, and silent to the leader"}},
	{rule: "a host gossip reports dead that answered the leader within silent_grace is not marked down; the leader reconciles when its silence may reach the grace",
		world: fleet(3).listens(0).answered("p2", 1500*time.Millisecond).dead("p2", time.Second), at: 2 * time.Second,
		nominated: map[string]time.Duration{"p2": time.Second}, next: 2500 * time.Millisecond},
	{rule: "a host the leader still hears is not marked down before down_grace, however long gossip has said dead",
		world: fleet(3).listens(0).answered("p2", 1400*time.Millisecond).dead("p2", 0), at: 1400 * time.Millisecond,
		next: 1500 * time.Millisecond},
	{rule: "... and is marked down on gossip's word alone once down_grace has run out",
		world: fleet(3).listens(0).answered("p2", 1500*time.Millisecond).dead("p2", 0), at: 1500 * time.Millisecond,
		downs: []string{"p2 gossip"}},
	{rule: "the leader's silence counts from when it began to listen: a new leader hears silent_grace for itself first",
		world: fleet(3).listens(0).silent("p2").dead("p2", -time.Minute), at: 900 * time.Millisecond, next: time.Second},
	{rule: "... then confirms a death gossip saw before its leadership",
		world: fleet(3).listens(0).silent("p2").dead("p2", -time.Minute), at: time.Second,
		downs: []string{"p2 gossip, and silent to the leader"}},
	{rule: "a leader whose own gossip health is poor does not trust its ears: gossip's word waits for the doubled down_grace",
		world: fleet(3).listens(0).silent("p2").dead("p2", 0).unhealthy(1), at: 2 * time.Second, next: 3 * time.Second},
	{rule: "... nor does its hearing hold a death back then",
		world: fleet(3).listens(0).answered("p2", 2900*time.Millisecond).dead("p2", 0).unhealthy(1), at: 3 * time.Second,
		downs: []string{"p2 gossip"}},
	{rule: "silence without gossip's word is no death",
		world: fleet(3).listens(0).silent("p2", "p3"), at: 10 * time.Second, next: none},
	{rule: "with silent_grace off, the leader's ears count for nothing: gossip's word waits for down_grace",
		world: fleet(3).listens(0).answered("p2", 1400*time.Millisecond).dead("p2", 0), at: 1500 * time.Millisecond,
		set: func(s *judgeSettings) { s.silentGrace = -1 }, downs: []string{"p2 gossip"}},
	{rule: "hosts the leader has not heard for silent_grace less one ping count as lost at once with a host gossip reports dead and silent: losing three of five so freezes",
		world: fleet(5).listens(0).answered("p2", 100*time.Millisecond).answered("p3", 300*time.Millisecond).
			answered("p4", 250*time.Millisecond).dead("p2", 1100*time.Millisecond), at: 1100 * time.Millisecond, frozen: true},
	{rule: "... a host heard more recently than that does not count",
		world: fleet(5).listens(0).answered("p2", 100*time.Millisecond).answered("p3", 400*time.Millisecond).
			answered("p4", 250*time.Millisecond).dead("p2", 1100*time.Millisecond), at: 1100 * time.Millisecond,
		downs: []string{"p2 gossip, and silent to the leader"}},
	{rule: "silence alone freezes nothing: the hosts gossip sees alive are judged by gossip",
		world: fleet(5).listens(0).silent("p2", "p3", "p4"), at: 5 * time.Second, next: none},
	{rule: "... nor while only a death confirmed in the last 10 s counts as lost",
		world: fleet(3).listens(0).status("p2", fsm.HostDown, 4*time.Second).confirmed("p2", 4*time.Second).dead("p2", 3*time.Second).
			silent("p2", "p3"), at: 5 * time.Second, next: none},
	{rule: "a leader whose own gossip health is poor does not count the hosts it does not hear as lost",
		world: fleet(5).listens(0).silent("p2", "p3", "p4").dead("p2", 0).unhealthy(1), at: 3 * time.Second,
		downs: []string{"p2 gossip"}},
	{rule: "refusals confirm a death whatever the leader heard",
		world: fleet(3).listens(0).answered("p2", 1900*time.Millisecond).dead("p2", time.Second).refusing("p2", 0, time.Second),
		at:    2 * time.Second, downs: []string{"p2 connections refused"}},

	// Refused connections: the process is gone.
	{rule: "a host whose two ports refused for refused_grace is marked down at once, though gossip still says alive",
		world: fleet(3).refusing("p2", time.Second, 2*time.Second), at: 2 * time.Second,
		downs: []string{"p2 connections refused"}, nominated: map[string]time.Duration{}},
	{rule: "refusals confirm a death gossip reports before down_grace runs out",
		world: fleet(3).dead("p2", time.Second).refusing("p2", time.Second, 2*time.Second), at: 2 * time.Second,
		downs: []string{"p2 connections refused"}},
	{rule: "refusals are not gossip's: an unhealthy leader does not stretch refused_grace",
		world: fleet(3).refusing("p2", 0, time.Second).unhealthy(1), at: time.Second,
		downs: []string{"p2 connections refused"}},
	{rule: "a run of refusals shorter than refused_grace nominates the host from its first refusal, and is due when it may last the grace",
		world: fleet(3).refusing("p2", time.Second, 1500*time.Millisecond), at: 1500 * time.Millisecond,
		nominated: map[string]time.Duration{"p2": time.Second}, next: 2 * time.Second},
	{rule: "... but no sooner than the next probe",
		world: fleet(3).refusing("p2", time.Second, 1950*time.Millisecond), at: 1950 * time.Millisecond,
		next: 2050 * time.Millisecond},
	{rule: "with refused_grace off, refusals count for nothing",
		world: fleet(3).refusing("p2", 0, 5*time.Second), at: 5 * time.Second, set: func(s *judgeSettings) { s.refusedGrace = -1 },
		nominated: map[string]time.Duration{}, next: none},
	{rule: "while it refuses, gossip's word that a host is alive does not bring it back up",
		world: fleet(3).status("p2", fsm.HostDown, time.Second).alive("p2", 2*time.Second).refusing("p2", time.Second, 5*time.Second),
		at:    10 * time.Second},

	// Hysteresis: a returning host is up again after up_grace.
	{rule: "a returning host is not up again before up_grace of continuous life",
		world: fleet(3).status("p2", fsm.HostDown, time.Second).alive("p2", 2*time.Second), at: 2900 * time.Millisecond},
	{rule: "... and is registered up again once it lived up_grace",
		world: fleet(3).status("p2", fsm.HostDown, time.Second).alive("p2", 2*time.Second), at: 3 * time.Second,
		updates: []string{"register p2"}},
	{rule: "up_grace counts from the leadership's start for a host that returned before it",
		world: fleet(3).status("p2", fsm.HostDown, -time.Minute).alive("p2", -30*time.Second), at: 900 * time.Millisecond},
	{rule: "... and is over up_grace after the leadership's start",
		world: fleet(3).status("p2", fsm.HostDown, -time.Minute).alive("p2", -30*time.Second), at: time.Second,
		updates: []string{"register p2"}},
	{rule: "a host forced down while gossip saw it alive stays down up_grace plus gossip's detection window after the commit",
		world: fleet(3).status("p2", fsm.HostDown, time.Second), at: 3900 * time.Millisecond},
	{rule: "... then, alive all along, it is up again",
		world: fleet(3).status("p2", fsm.HostDown, time.Second), at: 4 * time.Second, updates: []string{"register p2"}},
	{rule: "a host that left stays out up_grace plus the detection window too when gossip's news predates the commit",
		world: fleet(3).status("p2", fsm.HostLeft, time.Second), at: 3500 * time.Millisecond},
	{rule: "a host seen to restart (it refused, then accepted connections) has lived since it accepted them",
		world: fleet(3).status("p2", fsm.HostDown, time.Second).restarted("p2", 2*time.Second), at: 2900 * time.Millisecond},
	{rule: "... and is up again up_grace after it accepted them, sooner than the detection window",
		world: fleet(3).status("p2", fsm.HostDown, time.Second).restarted("p2", 2*time.Second), at: 3 * time.Second,
		updates: []string{"register p2"}},
	{rule: "a restart from before the commit that took the host down does not count",
		world: fleet(3).status("p2", fsm.HostDown, 2*time.Second).restarted("p2", time.Second), at: 3500 * time.Millisecond},

	// Membership.
	{rule: "a new member is registered with the addresses gossip carries",
		world: fleet(3).newMember("p4"), at: 0, updates: []string{"register p4"}},
	{rule: "a member that gives no raft address is not registered",
		world: fleet(3).newMember("p4").noRaftAddr("p4"), at: 0},
	{rule: "an up host whose addresses changed is registered again",
		world: fleet(3).readdress("p2"), at: 0, updates: []string{"register p2"}},
	{rule: "an up host alive at the same addresses changes nothing",
		world: fleet(3), at: time.Hour, next: none},
	{rule: "a host that leaves cleanly is marked left at once, with no grace",
		world: fleet(3).left("p2"), at: 0, updates: []string{"left p2"}},
	{rule: "a host the log has left already is not marked again",
		world: fleet(3).status("p2", fsm.HostLeft, -time.Hour).left("p2"), at: 0},
	{rule: "a host alive again (and not refusing) loses its nomination: a later death starts a new grace",
		world: fleet(3).nominated("p2", 0), at: time.Second, nominated: map[string]time.Duration{}},

	// Unknown to gossip.
	{rule: "a host up in the log that gossip has not known since this leadership began is left alone within DeadGrace",
		world: fleet(3).unknown("p3"), at: 9 * time.Second},
	{rule: "... and past DeadGrace is nominated at the leadership's start and marked down",
		world: fleet(3).unknown("p3"), at: 10 * time.Second, downs: []string{"p3 gossip"},
		nominated: map[string]time.Duration{"p3": 0}},

	// The freeze.
	{rule: "with five hosts, losing two proceeds (2 ≤ 0.5 × 5)",
		world: fleet(5).dead("p2", 0).dead("p3", 0), at: 2 * time.Second, downs: []string{"p2 gossip", "p3 gossip"}},
	{rule: "with five hosts, losing three freezes: nobody is marked down",
		world: fleet(5).dead("p2", 0).dead("p3", 0).dead("p4", 0), at: 2 * time.Second, frozen: true},
	{rule: "with three hosts, losing one proceeds",
		world: fleet(3).dead("p2", 0), at: 2 * time.Second, downs: []string{"p2 gossip"}},
	{rule: "with three hosts, losing two freezes",
		world: fleet(3).dead("p2", 0).dead("p3", 0), at: 2 * time.Second, frozen: true},
	{rule: "hosts that refuse connections count as lost from their first refusal, before the grace",
		world: fleet(5).dead("p2", 0).dead("p3", 0).refusing("p4", 1900*time.Millisecond, 1900*time.Millisecond), at: 2 * time.Second,
		frozen: true},
	{rule: "hosts unknown to gossip past DeadGrace count as lost",
		world: fleet(3).dead("p2", 9*time.Second).unknown("p3"), at: 11 * time.Second, frozen: true},
	{rule: "a death this leader confirmed in the last 10 s counts as lost (and as up)",
		world: fleet(5).status("p2", fsm.HostDown, 5*time.Second).confirmed("p2", 5*time.Second).dead("p2", 4*time.Second).
			dead("p3", 12*time.Second).dead("p4", 12*time.Second), at: 14 * time.Second, frozen: true},
	{rule: "... a death confirmed longer ago does not",
		world: fleet(5).status("p2", fsm.HostDown, 5*time.Second).confirmed("p2", 5*time.Second).dead("p2", 4*time.Second).
			dead("p3", 14*time.Second).dead("p4", 14*time.Second), at: 16 * time.Second, downs: []string{"p3 gossip", "p4 gossip"}},
	{rule: "a freeze_fraction of 1 never freezes",
		world: fleet(3).dead("p2", 0).dead("p3", 0), at: 2 * time.Second, set: func(s *judgeSettings) { s.freeze = 1 },
		downs: []string{"p2 gossip", "p3 gossip"}},
	{rule: "while frozen, membership changes are still committed",
		world: fleet(5).dead("p2", 0).dead("p3", 0).dead("p4", 0).dead("p5", 0).newMember("p6"), at: 2 * time.Second,
		updates: []string{"register p6"}, frozen: true},
	{rule: "hosts registered at the same reconcile count as up",
		world: fleet(3).dead("p2", 0).dead("p3", 0).newMember("p4").newMember("p5"), at: 2 * time.Second,
		updates: []string{"register p4", "register p5"}, downs: []string{"p2 gossip", "p3 gossip"}},
	{rule: "with four hosts, losing two proceeds",
		world: fleet(4).dead("p2", 0).dead("p3", 0), at: 2 * time.Second, downs: []string{"p2 gossip", "p3 gossip"}},
	{rule: "hosts marked left at the same reconcile no longer count as up",
		world: fleet(4).dead("p2", 0).dead("p3", 0).left("p4"), at: 2 * time.Second,
		updates: []string{"left p4"}, frozen: true},
}

func TestJudge(t *testing.T) {
	for i, c := range judgeCases {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			set := defaultSettings()
			if c.set != nil {
				c.set(&set)
			}
			w := c.world
			nominatedBefore, downAtBefore := maps.Clone(w.mem.nominated), maps.Clone(w.mem.downAt)
			in := judgeInput{now: ts(c.at), members: w.members, hosts: w.hosts, refused: w.refused, back: w.back, health: w.health,
				listening: w.listening, heard: w.heardAt(ts(c.at)), self: "p1"}
			v := judge(in, set, w.mem)

			var updates, downs []string
			for _, u := range v.updates {
				switch cmd := u.cmd.(type) {
				case *fsm.RegisterHost:
					r, a, g := addrs(u.host)
					if m := w.member(u.host); m.Meta.APIAddr != a {
						a = m.Meta.APIAddr
					}
					if cmd.Name != u.host || cmd.RaftAddr != r || cmd.APIAddr != a || cmd.GossipAddr != g || cmd.Kind != fsm.KindIronic {
						t.Errorf("%s: register %+v: not gossip's addresses", c.rule, cmd)
					}
					updates = append(updates, "register "+u.host)
				case *fsm.SetHostStatus:
					if cmd.Name != u.host {
						t.Errorf("%s: %+v for %s", c.rule, cmd, u.host)
					}
					updates = append(updates, string(cmd.Status)+" "+u.host)
				default:
					t.Errorf("%s: update %T", c.rule, cmd)
				}
			}
			for _, d := range v.downs {
				downs = append(downs, d.host+" "+d.evidence)
				if d.since != v.nominated[d.host] {
					t.Errorf("%s: death of %s since %s, nominated at %s", c.rule, d.host, d.since, v.nominated[d.host])
				}
			}
			if !slices.Equal(updates, c.updates) {
				t.Errorf("%s:\n  updates %v, want %v", c.rule, updates, c.updates)
			}
			if !slices.Equal(downs, c.downs) {
				t.Errorf("%s:\n  downs %v, want %v", c.rule, downs, c.downs)
			}
			if v.frozen != c.frozen {
				t.Errorf("%s:\n  frozen %v (lost %d of %d up), want %v", c.rule, v.frozen, v.lost, v.up, c.frozen)
			}
			if c.frozen && len(v.downs) > 0 {
				t.Errorf("%s: frozen, yet marks %v down", c.rule, downs)
			}
			if c.nominated != nil {
				want := map[string]time.Time{}
				for h, d := range c.nominated {
					want[h] = ts(d)
				}
				// A confirmed death's nomination is dropped by the loop once
				// its commit succeeds, not by the judge.
				for _, d := range v.downs {
					want[d.host] = v.nominated[d.host]
				}
				if !maps.Equal(v.nominated, want) {
					t.Errorf("%s:\n  nominated %v, want %v", c.rule, v.nominated, want)
				}
			}
			switch {
			case c.next == none && !v.next.IsZero():
				t.Errorf("%s:\n  due at %s, want no grace pending", c.rule, v.next.Sub(leadStart))
			case c.next > 0 && !v.next.Equal(ts(c.next)):
				t.Errorf("%s:\n  due at %s, want %s", c.rule, v.next.Sub(leadStart), c.next)
			}
			if !maps.Equal(w.mem.nominated, nominatedBefore) || !maps.Equal(w.mem.downAt, downAtBefore) {
				t.Errorf("%s: the judge changed the memory it was given", c.rule)
			}
		})
	}
}

// The health the judge applied and the grace it gave gossip's word, for
// the loop's log.
func TestJudgeReportsTheGraceItApplied(t *testing.T) {
	for _, c := range []struct{ score, health int }{{0, 0}, {1, 1}, {7, 1}} {
		v := judge(judgeInput{now: leadStart, health: c.score}, defaultSettings(), judgeMemory{since: leadStart})
		if v.health != c.health || v.downGrace != time.Duration(1+c.health)*1500*time.Millisecond {
			t.Errorf("score %d: health %d, down_grace %s", c.score, v.health, v.downGrace)
		}
	}
}

// Plans: for each host that is down, has left or is drained and still owns
// live servers, none while failover is frozen (drains are held too).
func TestOwedPlans(t *testing.T) {
	hosts := []fsm.Host{
		{Name: "down", Status: fsm.HostDown},
		{Name: "down-empty", Status: fsm.HostDown},
		{Name: "drained", Status: fsm.HostUp, Drained: true},
		{Name: "left", Status: fsm.HostLeft},
		{Name: "up", Status: fsm.HostUp},
	}
	load := map[string]int{"down": 3, "drained": 1, "left": 2, "up": 5}
	var got []string
	for _, o := range owedPlans(hosts, load, false) {
		got = append(got, o.host+": "+o.reason)
	}
	want := []string{"down: " + fsm.ReasonHostDown, "drained: " + fsm.ReasonDrain, "left: host left"}
	if !slices.Equal(got, want) {
		t.Fatalf("plans %v, want %v", got, want)
	}
	if o := owedPlans(hosts, load, true); len(o) != 0 {
		t.Fatalf("frozen, yet plans %v", o)
	}
}

// Every rule of the table says what it holds, once.
func TestJudgeRulesAreNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range judgeCases {
		if strings.TrimSpace(c.rule) == "" || seen[c.rule] {
			t.Errorf("rule %q is empty or repeated", c.rule)
		}
		seen[c.rule] = true
	}
}
