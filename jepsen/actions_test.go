package main

import (
	"strings"
	"testing"
	"time"
)

// actRun is a synthetic actions run: server B (booted, ACTIVE on node X,
// owned by n1) takes actions; the simulator's log holds its deploy and
// whatever each test adds.
type actRun struct {
	h       *hist
	log     EffectLog
	fs      FinalState
	windows []Window
	seq     int64
}

const (
	uaN1 = "corral-host/n1 corral gophercloud/v2.9.0"
	uaN4 = "corral-host/n4 corral gophercloud/v2.9.0"
)

func newActRun() *actRun {
	r := &actRun{h: &hist{}, fs: cleanFinal()}
	r.h.boot(0, "b", idB)
	r.effect("provision", "active", "", uaN1) // the boot's deploy: no request id
	r.readB(1, "ACTIVE", "")
	return r
}

// readB is a linearizable show of B.
func (r *actRun) readB(p int, status, task string) {
	v := OpValue{ID: idB, Name: "b"}
	r.h.add(Op{Process: p, Type: Invoke, F: FRead, Node: "n3", Consistency: Linearizable, Value: v})
	v.Server = &ServerState{ID: idB, Name: "b", Status: status, Task: task, Host: "n1", Node: nodeX}
	r.h.add(Op{Process: p, Type: OK, F: FRead, Node: "n3", Consistency: Linearizable, Value: v, Code: 200})
}

// act records an action on B answered with typ and code, and returns its
// request id.
func (r *actRun) act(p int, kind, typ string, code int) string {
	rid := "req-" + newUUID()
	info := ActionInfo{Kind: kind, RequestID: rid, Node: nodeX, Host: "n1", Status: "ACTIVE"}
	v := OpValue{ID: idB, Name: "b", Action: &info}
	r.h.add(Op{Process: p, Type: Invoke, F: FAction, Node: "n2", Value: v})
	done := info
	done.Echoed = rid
	v.Action = &done
	r.h.add(Op{Process: p, Type: typ, F: FAction, Node: "n2", Value: v, Code: code})
	return rid
}

// effect adds an accepted side effect on node X now.
func (r *actRun) effect(kind, target, rid, ua string) {
	r.h.t += int64(time.Millisecond)
	r.seq++
	r.log.SideEffects = append(r.log.SideEffects, SideEffect{Seq: r.seq, At: r.h.t, Time: time.Unix(0, r.h.t),
		Node: nodeX, Method: "PUT", Path: "/v1/nodes/" + nodeX + "/states/" + kind, Kind: kind, Target: target,
		RequestID: rid, UserAgent: ua, Status: 202, ProvisionState: "active", PowerState: "power off"})
}

func (r *actRun) check() ActionResult {
	return CheckActions(indexHistory(r.h.ops), r.log, r.fs, r.windows)
}

func wantAction(t *testing.T, res ActionResult, kind string) Anomaly {
	t.Helper()
	if res.Valid {
		t.Fatalf("verdict valid, want %s; %s", kind, actionSummary(&res))
	}
	for _, a := range res.Anomalies {
		if a.Kind == kind {
			return a
		}
	}
	t.Fatalf("no %s anomaly; got %+v", kind, res.Anomalies)
	return Anomaly{}
}

// cleanActions: a rebuild and a hard reboot carried out once each (the
// reboot's side effect without a request id), a stop of a node already
// powered off that Ironic was not asked for, a start, and a refused soft
// reboot.
func cleanActions() *actRun {
	r := newActRun()
	rid := r.act(2, ActRebuild, OK, 202)
	r.effect("provision", "rebuild", rid, uaN1)
	r.readB(2, "REBUILD", "rebuilding")
	r.readB(2, "ACTIVE", "")
	r.act(3, ActRebootSoft, Fail, 409) // while the rebuild ran
	r.act(2, ActStop, OK, 202)         // the node is off already: nothing to do
	r.readB(2, "SHUTOFF", "")
	rid = r.act(2, ActStart, OK, 202)
	r.effect("power", "power on", rid, uaN1)
	r.readB(2, "ACTIVE", "")
	r.act(2, ActRebootHard, OK, 202)
	r.effect("power", "rebooting", "", uaN1)
	r.readB(2, "ACTIVE", "")
	return r
}

func TestActionsCleanRunIsValid(t *testing.T) {
	r := cleanActions()
	res := r.check()
	if !res.Valid {
		t.Fatalf("clean run invalid: %+v", res.Anomalies)
	}
	if res.Accepted != 4 || res.Refused != 1 || res.SideEffects != 3 || res.WithID != 2 || res.ByWindow != 1 ||
		res.Checked != 4 || res.NoopAlready != 1 || res.Duplicated != 0 || res.Nodes[nodeX].Requests != 1 {
		t.Fatalf("counts: %s %+v", actionSummary(&res), res.Nodes[nodeX])
	}
	if l := lin(t, r.h.ops); !l.Valid {
		t.Fatalf("linearizability of a history with actions: %+v", l.Illegal)
	}
}

func TestActionsDuplicateRebuildIsCaught(t *testing.T) {
	r := newActRun()
	rid := r.act(2, ActRebuild, OK, 202)
	r.effect("provision", "rebuild", rid, uaN1) // the old owner
	r.effect("provision", "rebuild", rid, uaN4) // the new owner, after a failover
	r.readB(2, "ACTIVE", "")
	res := r.check()
	an := wantAction(t, res, "duplicate-side-effect")
	for _, want := range []string{rid, idB, nodeX, uaN1, uaN4, "2 times"} {
		if !strings.Contains(an.Detail, want) {
			t.Fatalf("the anomaly does not name %q: %s", want, an.Detail)
		}
	}
	wantAction(t, res, "node-rebuilt-twice")
	if res.Duplicated != 1 || res.Extra != 1 || res.Nodes[nodeX].Doubled != 1 {
		t.Fatalf("counts: %s", actionSummary(&res))
	}
}

// Without request ids (a driver that sends none) the side effects are
// given to the action by node, kind and time, and a repeat still shows.
func TestActionsDuplicateWithoutRequestIDs(t *testing.T) {
	r := newActRun()
	r.act(2, ActRebootHard, OK, 202)
	r.effect("power", "rebooting", "", uaN1)
	r.effect("power", "rebooting", "", uaN4)
	r.readB(2, "ACTIVE", "")
	an := wantAction(t, r.check(), "duplicate-side-effect")
	if !strings.Contains(an.Detail, "by node, kind and time") {
		t.Fatalf("detail: %s", an.Detail)
	}
	if res := r.check(); res.NoID["n1"] != 1 || res.NoID["n4"] != 1 {
		t.Fatalf("without request id: %v", res.NoID)
	}

	// A soft reboot is one soft rebooting or one rebooting, not both.
	r = newActRun()
	rid := r.act(2, ActRebootSoft, OK, 202)
	r.effect("power", "rebooting", rid, uaN1)
	r.readB(2, "ACTIVE", "")
	if res := r.check(); !res.Valid {
		t.Fatalf("a soft reboot carried out as a power cycle: %+v", res.Anomalies)
	}
	r.effect("power", "soft rebooting", rid, uaN4)
	wantAction(t, r.check(), "duplicate-side-effect")
}

func TestActionsRefusedWithSideEffect(t *testing.T) {
	r := newActRun()
	rid := r.act(2, ActRebuild, Fail, 409)
	r.effect("provision", "rebuild", rid, uaN1)
	wantAction(t, r.check(), "refused-with-side-effect")
}

func TestActionsAcceptedWithoutSideEffect(t *testing.T) {
	r := newActRun()
	r.act(2, ActRebuild, OK, 202)
	r.readB(2, "ACTIVE", "")
	wantAction(t, r.check(), "action-without-side-effect")

	// A stop of a powered-on node must power it off.
	r = newActRun()
	r.effect("power", "power on", "", uaN1) // no action of ours before: unexplained, not failed
	r.act(2, ActStop, OK, 202)
	r.readB(2, "SHUTOFF", "")
	res := r.check()
	wantAction(t, res, "action-without-side-effect")
	if res.Unattributed != 1 {
		t.Fatalf("unattributed %d", res.Unattributed)
	}

	// Deleted meanwhile, still running at the end, or of unknown outcome:
	// not held to one side effect.
	r = newActRun()
	r.act(2, ActRebuild, OK, 202)
	r.h.del(4, idB, "b", OK, 204)
	r.fs.Servers[1].Status = "DELETED"
	if res := r.check(); !res.Valid || res.Unsettled != 1 {
		t.Fatalf("deleted meanwhile: %s %+v", actionSummary(&res), res.Anomalies)
	}
	r = newActRun()
	r.act(2, ActRebuild, OK, 202)
	r.act(3, ActRebootHard, Info, 0)
	if res := r.check(); !res.Valid || res.Unsettled != 1 || res.Unknown != 1 {
		t.Fatalf("end not seen: %s %+v", actionSummary(&res), res.Anomalies)
	}
}

func TestActionsWrongEndStatusAndOtherNode(t *testing.T) {
	r := newActRun()
	rid := r.act(2, ActStop, OK, 202)
	r.effect("power", "power off", rid, uaN1)
	r.readB(2, "ACTIVE", "")
	wantAction(t, r.check(), "wrong-end-status")

	r = newActRun()
	rid = r.act(2, ActRebootHard, OK, 202)
	r.effect("power", "rebooting", rid, uaN1)
	r.log.SideEffects[len(r.log.SideEffects)-1].Node = nodeY
	r.readB(2, "ACTIVE", "")
	wantAction(t, r.check(), "side-effect-on-other-node")
}

func TestActionsRunThatActedOnNothingOrCouldNotReadTheLog(t *testing.T) {
	r := newActRun()
	wantAction(t, r.check(), "nothing-acted")
	r = cleanActions()
	r.log.Error = "connection refused"
	wantAction(t, r.check(), "unreadable")
}

// The verdict and the exit status follow the actions checker.
func TestActionsInTheVerdict(t *testing.T) {
	r := newActRun()
	rid := r.act(2, ActRebuild, OK, 202)
	r.effect("provision", "rebuild", rid, uaN1)
	r.effect("provision", "rebuild", "", uaN4)
	r.readB(2, "ACTIVE", "")
	run := RunInfo{Started: "test", Workload: WorkloadActions}
	v := checkAll(r.h.ops, r.fs, nil, nil, r.log, time.Second, "", "", nil, t.TempDir(), run, 10*time.Second)
	if v.Actions == nil || v.Valid || exitCode(v) != 1 || v.Actions.Counts["duplicate-side-effect"] != 1 {
		t.Fatalf("verdict %v, exit %d, actions %+v", v.Valid, exitCode(v), v.Actions)
	}
	c := cleanActions()
	v = checkAll(c.h.ops, c.fs, nil, nil, c.log, time.Second, "", "", nil, t.TempDir(), run, 10*time.Second)
	if !v.Actions.Valid {
		t.Fatalf("clean actions invalid in the verdict: %+v", v.Actions.Anomalies)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, v); err != nil {
		t.Fatal(err)
	}
}

// Without an accepted action a status change is illegal; after one, the
// status may move between the states actions lead to, never back to BUILD.
func TestLinearizabilityWithActions(t *testing.T) {
	h := &hist{}
	h.boot(0, "b", idB)
	h.read(1, idB, "b", "ACTIVE", "")
	h.read(1, idB, "b", "SHUTOFF", "")
	if l := lin(t, h.ops); l.Valid {
		t.Fatal("ACTIVE → SHUTOFF without an action passed")
	}
	r := cleanActions()
	r.readB(1, "BUILD", "")
	if l := lin(t, r.h.ops); l.Valid {
		t.Fatal("back to BUILD after actions passed")
	}
}

// The side effects of an owner cut off by a partition are counted: Ironic
// must stay reachable from it for the workload to test anything.
func TestActionsCountSideEffectsOfCutOffAgents(t *testing.T) {
	r := newActRun()
	start := r.h.t
	rid := r.act(2, ActRebootHard, OK, 202)
	r.effect("power", "rebooting", rid, uaN1)
	r.readB(2, "ACTIVE", "")
	r.windows = []Window{
		{Name: "partition-isolate-one", Detail: "{n1} | {n2,n3,n4,n5} (owner of b)", Start: start, End: r.h.t},
		{Name: "partition-majority-minority", Detail: "{n4,n5} | {n1,n2,n3}", Start: start, End: r.h.t},
		{Name: "kill", Detail: "n1", Start: start, End: r.h.t},
	}
	res := r.check()
	if !res.Valid || res.CutOff != 1 || len(res.Notes) != 2 {
		t.Fatalf("cut off %d, notes %q", res.CutOff, res.Notes)
	}
	if agentOf(uaN4) != "n4" || agentOf("curl/8") != "" {
		t.Fatal("agentOf")
	}
}
