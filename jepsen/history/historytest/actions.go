package historytest

import (
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// ActRun is a synthetic actions run: server B (booted, ACTIVE on node X,
// owned by n1) takes actions; the simulator's log holds its deploy and
// whatever each test adds.
type ActRun struct {
	H       *Hist
	Log     client.EffectLog
	FS      history.FinalState
	Windows []history.Window
	seq     int64
}

// User-Agents of n1 and n4, as the simulator logs them.
const (
	UAN1 = "corral-host/n1 corral gophercloud/v2.9.0"
	UAN4 = "corral-host/n4 corral gophercloud/v2.9.0"
)

// NewActRun is a run in which B was booted and read ACTIVE, nothing else.
func NewActRun() *ActRun {
	r := &ActRun{H: &Hist{}, FS: CleanFinal()}
	r.H.Boot(0, "b", IDB)
	r.Effect("provision", "active", "", UAN1) // the boot's deploy: no request id
	r.ReadB(1, "ACTIVE", "")
	return r
}

// ReadB is a linearizable show of B.
func (r *ActRun) ReadB(p int, status, task string) {
	v := history.OpValue{ID: IDB, Name: "b"}
	r.H.Add(history.Op{Process: p, Type: history.Invoke, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v})
	v.Server = &history.ServerState{ID: IDB, Name: "b", Status: status, Task: task, Host: "n1", Node: NodeX}
	r.H.Add(history.Op{Process: p, Type: history.OK, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v, Code: 200})
}

// Act records an action on B answered with typ and code, and returns its
// request id.
func (r *ActRun) Act(p int, kind, typ string, code int) string {
	rid := "req-" + client.NewUUID()
	info := history.ActionInfo{Kind: kind, RequestID: rid, Node: NodeX, Host: "n1", Status: "ACTIVE"}
	v := history.OpValue{ID: IDB, Name: "b", Action: &info}
	r.H.Add(history.Op{Process: p, Type: history.Invoke, F: history.FAction, Node: "n2", Value: v})
	done := info
	done.Echoed = rid
	v.Action = &done
	r.H.Add(history.Op{Process: p, Type: typ, F: history.FAction, Node: "n2", Value: v, Code: code})
	return rid
}

// Effect adds an accepted side effect on node X now.
func (r *ActRun) Effect(kind, target, rid, ua string) {
	r.H.T += int64(time.Millisecond)
	r.seq++
	r.Log.SideEffects = append(r.Log.SideEffects, client.SideEffect{Seq: r.seq, At: r.H.T, Time: time.Unix(0, r.H.T),
		Node: NodeX, Method: "PUT", Path: "/v1/nodes/" + NodeX + "/states/" + kind, Kind: kind, Target: target,
		RequestID: rid, UserAgent: ua, Status: 202, ProvisionState: "active", PowerState: "power off"})
}

// CleanActions: a rebuild and a hard reboot carried out once each (the
// reboot's side effect without a request id), a stop of a node already
// powered off that Ironic was not asked for, a start, and a refused soft
// reboot.
func CleanActions() *ActRun {
	r := NewActRun()
	rid := r.Act(2, history.ActRebuild, history.OK, 202)
	r.Effect("provision", "rebuild", rid, UAN1)
	r.ReadB(2, "REBUILD", "rebuilding")
	r.ReadB(2, "ACTIVE", "")
	r.Act(3, history.ActRebootSoft, history.Fail, 409) // while the rebuild ran
	r.Act(2, history.ActStop, history.OK, 202)         // the node is off already: nothing to do
	r.ReadB(2, "SHUTOFF", "")
	rid = r.Act(2, history.ActStart, history.OK, 202)
	r.Effect("power", "power on", rid, UAN1)
	r.ReadB(2, "ACTIVE", "")
	r.Act(2, history.ActRebootHard, history.OK, 202)
	r.Effect("power", "rebooting", "", UAN1)
	r.ReadB(2, "ACTIVE", "")
	return r
}
