package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// ActionResult is the verdict of the actions checker.
type ActionResult struct {
	Valid        bool                      `json:"valid"`
	Actions      int                       `json:"actions"`
	Accepted     int                       `json:"accepted"`
	Refused      int                       `json:"refused"`
	Unknown      int                       `json:"unknown"`
	ByKind       map[string]map[string]int `json:"by_kind"`      // kind → ok, fail, info
	SideEffects  int                       `json:"side_effects"` // power changes and rebuilds in the log
	WithID       int                       `json:"with_request_id"`
	ByWindow     int                       `json:"attributed_by_node_and_time"`  // no request id: given to an action by node, kind and time
	Unattributed int                       `json:"unattributed"`                 // no request id, and no action it could be
	UnknownIDs   int                       `json:"unknown_request_ids"`          // a request id the history does not hold
	Duplicated   int                       `json:"duplicated_requests"`          // requests with more than one side effect
	Extra        int                       `json:"extra_side_effects"`           // side effects beyond the first of each request
	Checked      int                       `json:"checked_exactly_once"`         // accepted, ended ACTIVE or SHUTOFF, not deleted
	NoopAlready  int                       `json:"already_in_power_state"`       // of those: a stop or start with nothing to do
	Unsettled    int                       `json:"unsettled"`                    // accepted, but deleted meanwhile or the end not seen
	Deleted      int                       `json:"deleted_meanwhile"`            // of those: the server was deleted
	EndedOther   int                       `json:"ended_in_error"`               // accepted, and the server ended it in ERROR
	CutOff       int                       `json:"cut_off_side_effects"`         // side effects an agent took while a partition cut it off from the majority
	NoID         map[string]int            `json:"without_request_id,omitempty"` // power changes and rebuilds without a request id, by agent
	Nodes        map[string]*NodeRebuilds  `json:"rebuilds_per_node,omitempty"`
	Counts       map[string]int            `json:"anomaly_counts,omitempty"`
	Anomalies    []Anomaly                 `json:"anomalies,omitempty"`
	Notes        []string                  `json:"notes,omitempty"`
}

// NodeRebuilds counts one node's rebuild requests and the rebuilds Ironic
// took for them.
type NodeRebuilds struct {
	Requests    int `json:"requests"`
	SideEffects int `json:"side_effects"`
	Doubled     int `json:"requests_rebuilt_twice"`
}

func (r *ActionResult) add(kind, server, format string, args ...any) {
	r.Valid = false
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[kind]++
	if r.Counts[kind] <= 25 {
		r.Anomalies = append(r.Anomalies, Anomaly{Kind: kind, Server: server, Detail: fmt.Sprintf(format, args...)})
	}
}

func (r *ActionResult) note(format string, args ...any) {
	if len(r.Notes) < 40 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

// effectAction names the action a side effect carries out ("" for deploys,
// undeploys and VIFs, which belong to boots and deletes). A "rebooting"
// may be a hard reboot or a soft one Ironic refused (corral then power
// cycles, as Nova does).
func effectAction(e client.SideEffect) []string {
	switch {
	case e.Kind == "provision" && e.Target == "rebuild":
		return []string{history.ActRebuild}
	case e.Kind != "power":
		return nil
	}
	switch e.Target {
	case "power off", "soft power off":
		return []string{history.ActStop}
	case "power on":
		return []string{history.ActStart}
	case "rebooting":
		return []string{history.ActRebootHard, history.ActRebootSoft}
	case "soft rebooting":
		return []string{history.ActRebootSoft}
	}
	return nil
}

// powerAfter is the power state a power request leads to.
func powerAfter(target string) string {
	switch target {
	case "power off", "soft power off":
		return "power off"
	}
	return "power on"
}

// action is one server action of the history with what the checker found.
type action struct {
	p       history.Pair
	info    history.ActionInfo
	id      string
	typ     string
	invoke  int64
	done    int64 // completion time (never: none)
	effects []attributed
}

type attributed struct {
	e    client.SideEffect
	byID bool
}

func (a *action) describe() string {
	how := "accepted"
	switch a.typ {
	case history.Fail:
		how = "refused"
	case history.Info:
		how = "of unknown outcome"
	}
	at := "no answer"
	if a.p.Complete != nil {
		at = secs(a.p.Complete.Time)
		if a.p.Complete.Code != 0 {
			at = fmt.Sprintf("%d at %s", a.p.Complete.Code, at)
		}
	}
	return fmt.Sprintf("%s %s of server %s (node %s, owner %s when sent) via %s, sent at %s, %s (%s)",
		a.info.RequestID, a.info.Kind, a.id, orNone(a.info.Node), orNone(a.info.Host), a.p.Invoke.Node,
		secs(a.invoke), how, at)
}

func orNone(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func (x attributed) String() string {
	how := "request id"
	if !x.byID {
		how = "no request id: by node, kind and time"
	}
	return fmt.Sprintf("#%d %s %s on node %s at %s (%s) by %q, %s", x.e.Seq, x.e.Kind, x.e.Target, x.e.Node,
		secs(x.e.At), x.e.Time.Format("15:04:05.000"), x.e.UserAgent, how)
}

// Actions holds each server action to its side effects in Ironic
// (DESIGN.md invariant 5: an action is carried out once, by its owner):
//
//   - no request has more than one side effect of its kind (a rebuild:
//     provision target rebuild; stop: power off; start: power on; hard
//     reboot: rebooting; soft reboot: soft rebooting or, after Ironic
//     refused it, rebooting, one or the other once). Side effects carrying
//     the request's X-OpenStack-Request-Id count; one without a request id
//     counts for the latest action of its kind on its node sent before it;
//   - a refused request (4xx, 503) has no side effect carrying its id;
//   - an accepted request whose server ended the action ACTIVE or SHUTOFF
//     (the first linearizable show after the 202 with no task state, or
//     the final state), with no delete or other action sent meanwhile, has
//     exactly one side effect, or none for a stop or start of a node the
//     log shows in that power state already; it ended SHUTOFF for a stop,
//     ACTIVE for a start or reboot, and for a rebuild as the server was
//     when it was sent (Nova stops a stopped server again);
//   - per node, no rebuild request rebuilt it twice.
//
// Side effects with no request id that no action can explain, and request
// ids the history does not hold, are counted and listed, not failed.
func Actions(ix *history.Index, log client.EffectLog, fs history.FinalState, windows []history.Window) ActionResult {
	r := ActionResult{Valid: true, ByKind: map[string]map[string]int{}, Nodes: map[string]*NodeRebuilds{}}
	if log.Error != "" {
		r.add("unreadable", "", "%s", log.Error)
	}
	if log.Dropped > 0 {
		r.note("the simulator dropped its %d oldest side effects: counts may be low", log.Dropped)
	}
	acts, byRID := collectActions(ix, &r)
	if r.Accepted == 0 {
		r.add("nothing-acted", "", "no server action was accepted: the run tested no action")
	}
	r.cutOff(log, windows)
	r.attribute(log, acts, byRID)
	tl := newTimeline(ix)
	final := map[string]history.ServerState{}
	for _, s := range fs.Servers {
		final[s.ID] = s
	}
	for _, a := range acts {
		r.checkAction(a, tl, final, log)
	}
	for n, nr := range r.Nodes {
		if nr.Requests == 0 && nr.SideEffects == 0 {
			delete(r.Nodes, n)
		}
	}
	return r
}

// cutOff counts, for each partition, the side effects the agents on its
// small side took while it held: Ironic stays reachable from a peer cut
// off from the others, as the defect this workload looks for needs.
func (r *ActionResult) cutOff(log client.EffectLog, windows []history.Window) {
	for i, w := range windows {
		small := minoritySide(w)
		if len(small) == 0 || w.Error != "" {
			continue
		}
		n := 0
		for _, e := range log.SideEffects {
			if e.At >= w.Start && e.At <= w.End && small[agentOf(e.UserAgent)] {
				n++
			}
		}
		r.CutOff += n
		r.note("fault %d, %s %s: %d side effects in Ironic by the agents cut off (%s)", i+1, w.Name, w.Detail, n,
			strings.Join(slices.Sorted(maps.Keys(small)), ","))
	}
}

// minoritySide is the first side of an isolate-one or majority-minority
// partition ("{n5,n2} | {n1,n3,n4} ..."), the side cut off from the
// majority; nil for other windows.
func minoritySide(w history.Window) map[string]bool {
	if w.Name != "partition-isolate-one" && w.Name != "partition-majority-minority" {
		return nil
	}
	open, end := strings.Index(w.Detail, "{"), strings.Index(w.Detail, "}")
	if open < 0 || end < open {
		return nil
	}
	out := map[string]bool{}
	for _, a := range strings.Split(w.Detail[open+1:end], ",") {
		if a = strings.TrimSpace(a); a != "" {
			out[a] = true
		}
	}
	return out
}

// agentOf is the agent a corral User-Agent names ("corral-host/n3 corral
// gophercloud/..." is n3).
func agentOf(ua string) string {
	for _, f := range strings.Fields(ua) {
		if name, ok := strings.CutPrefix(f, "corral-host/"); ok {
			return name
		}
	}
	return ""
}

// collectActions indexes the history's actions by request id.
func collectActions(ix *history.Index, r *ActionResult) ([]*action, map[string]*action) {
	var acts []*action
	byRID := map[string]*action{}
	for _, p := range ix.Pairs {
		if p.Invoke.F != history.FAction || p.Invoke.Value.Action == nil {
			continue
		}
		a := &action{p: p, info: *p.Invoke.Value.Action, id: p.Invoke.Value.ID, typ: p.Type(), invoke: p.Invoke.Time, done: never}
		if c := p.Complete; c != nil {
			a.done = c.Time
			if c.Value.Action != nil && c.Value.Action.Echoed != "" && c.Value.Action.Echoed != a.info.RequestID {
				r.note("%s was answered with request id %s", a.info.RequestID, c.Value.Action.Echoed)
			}
		}
		r.Actions++
		if r.ByKind[a.info.Kind] == nil {
			r.ByKind[a.info.Kind] = map[string]int{}
		}
		r.ByKind[a.info.Kind][a.typ]++
		switch a.typ {
		case history.OK:
			r.Accepted++
		case history.Fail:
			r.Refused++
		default:
			r.Unknown++
		}
		acts = append(acts, a)
		byRID[a.info.RequestID] = a
	}
	return acts, byRID
}

// attribute gives each power or rebuild side effect to its action: by
// request id, else to the latest action of its kind on its node sent
// before it that was not refused.
func (r *ActionResult) attribute(log client.EffectLog, acts []*action, byRID map[string]*action) {
	byNode := map[string][]*action{} // in invocation order (Pairs are)
	for _, a := range acts {
		if a.typ != history.Fail && a.info.Node != "" {
			byNode[a.info.Node] = append(byNode[a.info.Node], a)
		}
	}
	for _, e := range log.SideEffects {
		kinds := effectAction(e)
		if e.RequestID != "" {
			if a, ok := byRID[e.RequestID]; ok {
				if a.typ == history.Fail {
					r.add("refused-with-side-effect", a.id, "%s; yet Ironic took %s", a.describe(), attributed{e: e, byID: true})
					continue
				}
				if !slices.Contains(kinds, a.info.Kind) {
					r.note("%s carries the request id of a %s (not counted as its side effect)", attributed{e: e, byID: true}, a.info.Kind)
					continue
				}
				r.SideEffects++
				r.WithID++
				a.effects = append(a.effects, attributed{e: e, byID: true})
				continue
			}
		}
		if len(kinds) == 0 {
			continue // deploys, undeploys, VIFs of boots and deletes
		}
		r.SideEffects++
		if e.RequestID == "" {
			if r.NoID == nil {
				r.NoID = map[string]int{}
			}
			r.NoID[orNone(agentOf(e.UserAgent))]++
		}
		if e.RequestID != "" {
			r.UnknownIDs++
			r.note("%s carries request id %s, which no action of the history sent", attributed{e: e, byID: true}, e.RequestID)
			continue
		}
		var owner *action
		for _, a := range byNode[e.Node] {
			if a.invoke < e.At && slices.Contains(kinds, a.info.Kind) {
				owner = a
			}
		}
		if owner == nil {
			r.Unattributed++
			r.note("%s has no request id and follows no %s on its node", attributed{e: e}, strings.Join(kinds, " or "))
			continue
		}
		r.ByWindow++
		owner.effects = append(owner.effects, attributed{e: e})
	}
}

// checkAction applies the rules to one action.
func (r *ActionResult) checkAction(a *action, tl *timeline, final map[string]history.ServerState, log client.EffectLog) {
	if a.typ == history.Fail {
		return // its id's side effects were flagged by attribute
	}
	if len(a.effects) > 1 {
		r.Duplicated++
		r.Extra += len(a.effects) - 1
		var lines []string
		for _, x := range a.effects {
			lines = append(lines, x.String())
		}
		r.add("duplicate-side-effect", a.id, "%s: Ironic carried it out %d times: %s", a.describe(), len(a.effects), strings.Join(lines, "; "))
	}
	for _, x := range a.effects {
		if a.info.Node != "" && x.e.Node != a.info.Node {
			r.add("side-effect-on-other-node", a.id, "%s: %s is not the server's node", a.describe(), x)
		}
	}
	if a.info.Kind == history.ActRebuild && a.info.Node != "" {
		nr := r.Nodes[a.info.Node]
		if nr == nil {
			nr = &NodeRebuilds{}
			r.Nodes[a.info.Node] = nr
		}
		nr.Requests++
		on := 0
		for _, x := range a.effects {
			if x.e.Node == a.info.Node {
				on++
			}
		}
		nr.SideEffects += on
		if on > 1 {
			nr.Doubled++
			r.add("node-rebuilt-twice", a.info.Node, "node %s re-imaged %d times for one rebuild request, %s", a.info.Node, on, a.info.RequestID)
		}
	}
	if a.typ != history.OK {
		return
	}
	end, why := tl.endOf(a, final)
	if end == "" {
		r.Unsettled++
		if why == "" {
			r.Deleted++
		} else {
			r.note("%s: not held to one side effect: %s", a.info.RequestID, why)
		}
		return
	}
	if end != "ACTIVE" && end != "SHUTOFF" {
		r.EndedOther++
		r.note("%s (%s of %s) ended with the server %s: not held to one side effect", a.info.RequestID, a.info.Kind, a.id, end)
		return
	}
	r.Checked++
	want := "ACTIVE"
	switch a.info.Kind {
	case history.ActStop:
		want = "SHUTOFF"
	case history.ActRebuild:
		// Nova stops a stopped server again after its rebuild.
		switch tl.startOf(a) {
		case "SHUTOFF":
			want = "SHUTOFF"
		case "":
			want = end // unknown: either end is Nova's
		}
	}
	if end != want {
		r.add("wrong-end-status", a.id, "%s: the server ended it %s, not %s", a.describe(), end, want)
	}
	if len(a.effects) > 0 {
		return
	}
	if p := powerAt(log, a.info.Node, a.invoke); (a.info.Kind == history.ActStop && p == "power off") || (a.info.Kind == history.ActStart && p == "power on") {
		r.NoopAlready++
		return
	}
	r.add("action-without-side-effect", a.id, "%s: the server ended it %s but Ironic took no %s for it", a.describe(), end, a.info.Kind)
}

// Summary is the one-line account of the actions checker.
func (r *ActionResult) Summary() string {
	return fmt.Sprintf("%d actions (%d accepted, %d refused, %d unknown); %d power and rebuild side effects in Ironic (%d with our request id, %d by node and time, %d unexplained); %d requests carried out more than once (%d extra side effects); %d held to exactly one (%d stops/starts with nothing to do), %d ended in ERROR, %d not settled (%d deleted meanwhile); %d side effects by agents cut off by a partition",
		r.Actions, r.Accepted, r.Refused, r.Unknown, r.SideEffects, r.WithID, r.ByWindow, r.Unattributed+r.UnknownIDs,
		r.Duplicated, r.Extra, r.Checked, r.NoopAlready, r.EndedOther, r.Unsettled, r.Deleted, r.CutOff)
}
