package check

import (
	"fmt"
	"sort"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// powerAt is the node's power state at time t as the log shows it: where
// the last power request before t leads, or the state the last other
// request found; "" when the log shows nothing of the node before t.
func powerAt(log client.EffectLog, node string, t int64) string {
	p := ""
	for _, e := range log.SideEffects {
		if e.Node != node || e.At >= t {
			continue
		}
		if e.Kind == "power" {
			p = powerAfter(e.Target)
		} else {
			p = e.PowerState
		}
	}
	return p
}

// timeline is what the history shows of each server after an action:
// linearizable shows and lists, deletes and other actions.
type timeline struct {
	seen    map[string][]sighting
	deletes map[string][]int64 // invocation times of deletes not refused
	actions map[string][]int64 // invocation times of actions not refused
	acts    map[string][]span  // the same actions, invocation to completion
}

// span is an operation from its invocation to its completion (never
// when it has none).
type span struct{ invoke, done int64 }

type sighting struct {
	at     int64 // invocation of the read
	answer int64 // its answer: the read took effect somewhere between the two
	status string
	gone   bool
	busy   bool // an action or a delete in progress
}

func newTimeline(ix *history.Index) *timeline {
	tl := &timeline{seen: map[string][]sighting{}, deletes: map[string][]int64{}, actions: map[string][]int64{}, acts: map[string][]span{}}
	for _, p := range ix.Pairs {
		c := p.Complete
		switch p.Invoke.F {
		case history.FDelete:
			if p.Type() != history.Fail {
				tl.deletes[p.Invoke.Value.ID] = append(tl.deletes[p.Invoke.Value.ID], p.Invoke.Time)
			}
		case history.FAction:
			if p.Type() != history.Fail {
				id := p.Invoke.Value.ID
				tl.actions[id] = append(tl.actions[id], p.Invoke.Time)
				sp := span{invoke: p.Invoke.Time, done: never}
				if c != nil {
					sp.done = c.Time
				}
				tl.acts[id] = append(tl.acts[id], sp)
			}
		case history.FRead:
			if c == nil || c.Type != history.OK || p.Invoke.Consistency != history.Linearizable {
				continue
			}
			id := p.Invoke.Value.ID
			if s := c.Value.Server; s != nil {
				tl.seen[id] = append(tl.seen[id], sighting{at: p.Invoke.Time, answer: c.Time, status: s.Status, busy: s.Task != "" || s.Acting()})
			} else if c.Value.NotFound {
				tl.seen[id] = append(tl.seen[id], sighting{at: p.Invoke.Time, answer: c.Time, gone: true})
			}
		case history.FList:
			if c == nil || c.Type != history.OK || p.Invoke.Consistency != history.Linearizable {
				continue
			}
			for _, s := range c.Value.Servers {
				tl.seen[s.ID] = append(tl.seen[s.ID], sighting{at: p.Invoke.Time, answer: c.Time, status: s.Status, busy: s.Task != "" || s.Acting()})
			}
		}
	}
	for _, v := range tl.seen {
		sort.Slice(v, func(i, j int) bool { return v[i].at < v[j].at })
	}
	return tl
}

// endOf is the status the server ended action a with: the first
// linearizable sighting sent after a's 202 with no task state; else the
// final state. "" (and why) when the server was deleted, another action
// was sent before that sighting was answered (a read takes effect at some
// point between its invocation and its answer, so an action sent while it
// was in flight may already show in it), or no end was seen.
func (tl *timeline) endOf(a *action, final map[string]history.ServerState) (string, string) {
	between := func(ts []int64, from, to int64) bool {
		for _, t := range ts {
			if t > from && t < to {
				return true
			}
		}
		return false
	}
	for _, s := range tl.seen[a.id] {
		if s.at < a.done || s.busy {
			continue
		}
		switch {
		case between(tl.deletes[a.id], a.invoke, max(s.at, s.answer)+1) || s.gone:
			return "", ""
		case between(tl.actions[a.id], a.invoke, max(s.at, s.answer)):
			return "", "another action was sent before its end was seen"
		}
		return s.status, ""
	}
	f, ok := final[a.id]
	switch {
	case between(tl.deletes[a.id], a.invoke, never) || !ok || f.Status == "DELETED":
		return "", ""
	case between(tl.actions[a.id], a.invoke, never):
		return "", "another action was sent before its end was seen"
	case f.Task != "" || f.Acting():
		return "", fmt.Sprintf("still %s (task %q) in the final state", f.Status, f.Task)
	}
	return f.Status, ""
}

// startOf is the status the server had when action a was sent: that of
// the last linearizable sighting answered before, with no task, when no
// other action sent before a may have landed after that sighting was sent
// (nor a delete); "" when unknown.
func (tl *timeline) startOf(a *action) string {
	var last *sighting
	for i, s := range tl.seen[a.id] {
		if s.answer < a.invoke && (last == nil || s.at > last.at) {
			last = &tl.seen[a.id][i]
		}
	}
	if last == nil || last.busy || last.gone {
		return ""
	}
	for _, b := range tl.acts[a.id] {
		if b.invoke < a.invoke && b.done > last.at {
			return ""
		}
	}
	for _, t := range tl.deletes[a.id] {
		if t < a.invoke && t > last.at {
			return ""
		}
	}
	return last.status
}
