package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

// checkRun runs the actions checker on the synthetic run.
func checkRun(r *historytest.ActRun) ActionResult {
	return Actions(history.NewIndex(r.H.Ops), r.Log, r.FS, r.Windows)
}

func wantAction(t *testing.T, res ActionResult, kind string) Anomaly {
	t.Helper()
	if res.Valid {
		t.Fatalf("verdict valid, want %s; %s", kind, res.Summary())
	}
	for _, a := range res.Anomalies {
		if a.Kind == kind {
			return a
		}
	}
	t.Fatalf("no %s anomaly; got %+v", kind, res.Anomalies)
	return Anomaly{}
}

func TestActionsCleanRunIsValid(t *testing.T) {
	r := historytest.CleanActions()
	res := checkRun(r)
	if !res.Valid {
		t.Fatalf("clean run invalid: %+v", res.Anomalies)
	}
	if res.Accepted != 4 || res.Refused != 1 || res.SideEffects != 3 || res.WithID != 2 || res.ByWindow != 1 ||
		res.Checked != 4 || res.NoopAlready != 1 || res.Duplicated != 0 || res.Nodes[historytest.NodeX].Requests != 1 {
		t.Fatalf("counts: %s %+v", res.Summary(), res.Nodes[historytest.NodeX])
	}
	if l := lin(t, r.H.Ops); !l.Valid {
		t.Fatalf("linearizability of a history with actions: %+v", l.Illegal)
	}
}

func TestActionsDuplicateRebuildIsCaught(t *testing.T) {
	r := historytest.NewActRun()
	rid := r.Act(2, history.ActRebuild, history.OK, 202)
	r.Effect("provision", "rebuild", rid, historytest.UAN1) // the old owner
	r.Effect("provision", "rebuild", rid, historytest.UAN4) // the new owner, after a failover
	r.ReadB(2, "ACTIVE", "")
	res := checkRun(r)
	an := wantAction(t, res, "duplicate-side-effect")
	for _, want := range []string{rid, historytest.IDB, historytest.NodeX, historytest.UAN1, historytest.UAN4, "2 times"} {
		if !strings.Contains(an.Detail, want) {
			t.Fatalf("the anomaly does not name %q: %s", want, an.Detail)
		}
	}
	wantAction(t, res, "node-rebuilt-twice")
	if res.Duplicated != 1 || res.Extra != 1 || res.Nodes[historytest.NodeX].Doubled != 1 {
		t.Fatalf("counts: %s", res.Summary())
	}
}

// Without request ids (a driver that sends none) the side effects are
// given to the action by node, kind and time, and a repeat still shows.
func TestActionsDuplicateWithoutRequestIDs(t *testing.T) {
	r := historytest.NewActRun()
	r.Act(2, history.ActRebootHard, history.OK, 202)
	r.Effect("power", "rebooting", "", historytest.UAN1)
	r.Effect("power", "rebooting", "", historytest.UAN4)
	r.ReadB(2, "ACTIVE", "")
	an := wantAction(t, checkRun(r), "duplicate-side-effect")
	if !strings.Contains(an.Detail, "by node, kind and time") {
		t.Fatalf("detail: %s", an.Detail)
	}
	if res := checkRun(r); res.NoID["n1"] != 1 || res.NoID["n4"] != 1 {
		t.Fatalf("without request id: %v", res.NoID)
	}

	// A soft reboot is one soft rebooting or one rebooting, not both.
	r = historytest.NewActRun()
	rid := r.Act(2, history.ActRebootSoft, history.OK, 202)
	r.Effect("power", "rebooting", rid, historytest.UAN1)
	r.ReadB(2, "ACTIVE", "")
	if res := checkRun(r); !res.Valid {
		t.Fatalf("a soft reboot carried out as a power cycle: %+v", res.Anomalies)
	}
	r.Effect("power", "soft rebooting", rid, historytest.UAN4)
	wantAction(t, checkRun(r), "duplicate-side-effect")
}

func TestActionsRefusedWithSideEffect(t *testing.T) {
	r := historytest.NewActRun()
	rid := r.Act(2, history.ActRebuild, history.Fail, 409)
	r.Effect("provision", "rebuild", rid, historytest.UAN1)
	wantAction(t, checkRun(r), "refused-with-side-effect")
}

func TestActionsAcceptedWithoutSideEffect(t *testing.T) {
	r := historytest.NewActRun()
	r.Act(2, history.ActRebuild, history.OK, 202)
	r.ReadB(2, "ACTIVE", "")
	wantAction(t, checkRun(r), "action-without-side-effect")

	// A stop of a powered-on node must power it off.
	r = historytest.NewActRun()
	r.Effect("power", "power on", "", historytest.UAN1) // no action of ours before: unexplained, not failed
	r.Act(2, history.ActStop, history.OK, 202)
	r.ReadB(2, "SHUTOFF", "")
	res := checkRun(r)
	wantAction(t, res, "action-without-side-effect")
	if res.Unattributed != 1 {
		t.Fatalf("unattributed %d", res.Unattributed)
	}

	// Deleted meanwhile, still running at the end, or of unknown outcome:
	// not held to one side effect.
	r = historytest.NewActRun()
	r.Act(2, history.ActRebuild, history.OK, 202)
	r.H.Del(4, historytest.IDB, "b", history.OK, 204)
	r.FS.Servers[1].Status = "DELETED"
	if res := checkRun(r); !res.Valid || res.Unsettled != 1 {
		t.Fatalf("deleted meanwhile: %s %+v", res.Summary(), res.Anomalies)
	}
	r = historytest.NewActRun()
	r.Act(2, history.ActRebuild, history.OK, 202)
	r.Act(3, history.ActRebootHard, history.Info, 0)
	if res := checkRun(r); !res.Valid || res.Unsettled != 1 || res.Unknown != 1 {
		t.Fatalf("end not seen: %s %+v", res.Summary(), res.Anomalies)
	}
}

// A rebuild ends in the status the server had: SHUTOFF when it was
// stopped, as Nova stops it again; ACTIVE otherwise.
func TestActionsRebuildEndsAsTheServerWas(t *testing.T) {
	rebuild := func(before, after string) ActionResult {
		r := historytest.NewActRun()
		if before == "SHUTOFF" {
			r.Act(2, history.ActStop, history.OK, 202) // the node is off already
			r.ReadB(2, "SHUTOFF", "")
		}
		rid := r.Act(2, history.ActRebuild, history.OK, 202)
		r.Effect("provision", "rebuild", rid, historytest.UAN1)
		r.ReadB(2, "REBUILD", "rebuilding")
		r.ReadB(2, after, "")
		return checkRun(r)
	}
	if res := rebuild("SHUTOFF", "SHUTOFF"); !res.Valid {
		t.Fatalf("a stopped server rebuilt and stopped again: %s %+v", res.Summary(), res.Anomalies)
	}
	wantAction(t, rebuild("SHUTOFF", "ACTIVE"), "wrong-end-status")
	wantAction(t, rebuild("ACTIVE", "SHUTOFF"), "wrong-end-status")
	if res := rebuild("ACTIVE", "ACTIVE"); !res.Valid {
		t.Fatalf("an active server rebuilt: %s %+v", res.Summary(), res.Anomalies)
	}

	// Another action that may have landed after the last show: the
	// status before is unknown, either end is taken.
	r := historytest.NewActRun()
	r.H.Add(history.Op{Process: 5, Type: history.Invoke, F: history.FAction, Value: history.OpValue{ID: historytest.IDB, Name: "b",
		Action: &history.ActionInfo{Kind: history.ActStop, RequestID: "req-other", Node: historytest.NodeX}}})
	rid := r.Act(2, history.ActRebuild, history.OK, 202)
	r.Effect("provision", "rebuild", rid, historytest.UAN1)
	r.ReadB(2, "SHUTOFF", "")
	if res := checkRun(r); slices.ContainsFunc(res.Anomalies, func(a Anomaly) bool { return a.Kind == "wrong-end-status" }) {
		t.Fatalf("a rebuild after a stop of unknown outcome: %+v", res.Anomalies)
	}
}

func TestActionsWrongEndStatusAndOtherNode(t *testing.T) {
	r := historytest.NewActRun()
	rid := r.Act(2, history.ActStop, history.OK, 202)
	r.Effect("power", "power off", rid, historytest.UAN1)
	r.ReadB(2, "ACTIVE", "")
	wantAction(t, checkRun(r), "wrong-end-status")

	r = historytest.NewActRun()
	rid = r.Act(2, history.ActRebootHard, history.OK, 202)
	r.Effect("power", "rebooting", rid, historytest.UAN1)
	r.Log.SideEffects[len(r.Log.SideEffects)-1].Node = historytest.NodeY
	r.ReadB(2, "ACTIVE", "")
	wantAction(t, checkRun(r), "side-effect-on-other-node")
}

func TestActionsRunThatActedOnNothingOrCouldNotReadTheLog(t *testing.T) {
	r := historytest.NewActRun()
	wantAction(t, checkRun(r), "nothing-acted")
	r = historytest.CleanActions()
	r.Log.Error = "connection refused"
	wantAction(t, checkRun(r), "unreadable")
}

// Without an accepted action a status change is illegal; after one, the
// status may move between the states actions lead to, never back to BUILD.
func TestLinearizabilityWithActions(t *testing.T) {
	h := &historytest.Hist{}
	h.Boot(0, "b", historytest.IDB)
	h.Read(1, historytest.IDB, "b", "ACTIVE", "")
	h.Read(1, historytest.IDB, "b", "SHUTOFF", "")
	if l := lin(t, h.Ops); l.Valid {
		t.Fatal("ACTIVE → SHUTOFF without an action passed")
	}
	r := historytest.CleanActions()
	r.ReadB(1, "BUILD", "")
	if l := lin(t, r.H.Ops); l.Valid {
		t.Fatal("back to BUILD after actions passed")
	}
}

// The side effects of an owner cut off by a partition are counted: Ironic
// must stay reachable from it for the workload to test anything.
func TestActionsCountSideEffectsOfCutOffAgents(t *testing.T) {
	r := historytest.NewActRun()
	start := r.H.T
	rid := r.Act(2, history.ActRebootHard, history.OK, 202)
	r.Effect("power", "rebooting", rid, historytest.UAN1)
	r.ReadB(2, "ACTIVE", "")
	r.Windows = []history.Window{
		{Name: "partition-isolate-one", Detail: "{n1} | {n2,n3,n4,n5} (owner of b)", Start: start, End: r.H.T},
		{Name: "partition-majority-minority", Detail: "{n4,n5} | {n1,n2,n3}", Start: start, End: r.H.T},
		{Name: "kill", Detail: "n1", Start: start, End: r.H.T},
	}
	res := checkRun(r)
	if !res.Valid || res.CutOff != 1 || len(res.Notes) != 2 {
		t.Fatalf("cut off %d, notes %q", res.CutOff, res.Notes)
	}
	if agentOf(historytest.UAN4) != "n4" || agentOf("curl/8") != "" {
		t.Fatal("agentOf")
	}
}

// A read in flight while the next action is sent may already show that
// action: it is not the end of the action before (run 20261201-204637: a
// show sent to a paused peer after a stop, answered ACTIVE after a hard
// reboot was sent).
func TestActionsReadAnsweredAfterTheNextAction(t *testing.T) {
	r := historytest.NewActRun()
	rid := r.Act(2, history.ActStop, history.OK, 202)
	r.Effect("power", "power off", rid, historytest.UAN1)
	v := history.OpValue{ID: historytest.IDB, Name: "b"}
	r.H.Add(history.Op{Process: 5, Type: history.Invoke, F: history.FRead, Node: "n1", Consistency: history.Linearizable, Value: v})
	rid = r.Act(3, history.ActRebootHard, history.OK, 202)
	r.Effect("power", "rebooting", rid, historytest.UAN1)
	v.Server = &history.ServerState{ID: historytest.IDB, Name: "b", Status: "ACTIVE", Host: "n1", Node: historytest.NodeX}
	r.H.Add(history.Op{Process: 5, Type: history.OK, F: history.FRead, Node: "n1", Consistency: history.Linearizable, Value: v, Code: 200})
	r.ReadB(2, "ACTIVE", "")
	if res := checkRun(r); !res.Valid {
		t.Fatalf("a read answered after the next action was sent was taken as the stop's end: %+v", res.Anomalies)
	}
}
