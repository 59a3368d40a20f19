package history

import (
	"sort"

	"github.com/corral-dev/corral/jepsen/client"
)

func lastTime(ops []Op) int64 {
	var t int64
	for _, op := range ops {
		if op.Time > t {
			t = op.Time
		}
	}
	return t
}

func appendOps(ops []Op, more ...Op) []Op {
	for _, op := range more {
		op.Index = len(ops)
		op.Injected = true
		ops = append(ops, op)
	}
	return ops
}

// InjectLostAck adds an acknowledged boot of a server that never existed:
// the final-state checker must report it lost.
func InjectLostAck(ops []Op) []Op {
	t := lastTime(ops)
	name, id := "jepsen-injected-lost", client.NewUUID()
	return appendOps(ops,
		Op{Process: 1 << 20, Type: Invoke, F: FBoot, Node: "n1", Time: t + 1e6, Value: OpValue{Name: name}},
		Op{Process: 1 << 20, Type: OK, F: FBoot, Node: "n1", Time: t + 2e6, Value: OpValue{Name: name, ID: id}, Code: 202})
}

// InjectResurrection adds, after everything else, a linearizable read that
// shows a server whose delete was acknowledged as ACTIVE and not being
// deleted: the linearizability checker must reject it. It returns false
// when the history has no acknowledged delete to build on.
func InjectResurrection(ops []Op) ([]Op, bool) {
	ix := NewIndex(ops)
	var ids []string
	for _, p := range ix.Pairs {
		if p.Invoke.F == FDelete && p.Type() == OK {
			ids = append(ids, p.Invoke.Value.ID)
		}
	}
	if len(ids) == 0 {
		return ops, false
	}
	sort.Strings(ids)
	id := ids[0]
	name := ix.NameOf[id]
	t := lastTime(ops)
	v := OpValue{ID: id, Name: name}
	seen := v
	seen.Server = &ServerState{ID: id, Name: name, Status: "ACTIVE"}
	return appendOps(ops,
		Op{Process: 1<<20 + 1, Type: Invoke, F: FRead, Node: "n1", Consistency: Linearizable, Time: t + 1e6, Value: v},
		Op{Process: 1<<20 + 1, Type: OK, F: FRead, Node: "n1", Consistency: Linearizable, Time: t + 2e6, Value: seen, Code: 200}), true
}

// DescribeInjection names what was injected, for the report.
func DescribeInjection(lost, resurrect bool, resurrected bool) []string {
	var out []string
	if lost {
		out = append(out, "lost-ack (an acknowledged boot of a server that never existed)")
	}
	if resurrect {
		if resurrected {
			out = append(out, "resurrection (a linearizable read showing a deleted server ACTIVE)")
		} else {
			out = append(out, "resurrection skipped: no acknowledged delete in the history")
		}
	}
	return out
}
