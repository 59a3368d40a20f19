// Package historytest builds synthetic histories, final states and runs
// (Hist, ActRun, MassRun) for the tests of the checkers, the report and
// -recheck.
package historytest

import (
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
)

// Hist builds synthetic histories, one millisecond per event.
type Hist struct {
	Ops []history.Op
	T   int64
}

// Add stamps op one millisecond after the last event and appends it.
func (h *Hist) Add(op history.Op) {
	h.T += int64(time.Millisecond)
	op.Time, op.Index = h.T, len(h.Ops)
	h.Ops = append(h.Ops, op)
}

// Boot is a boot via n1 acknowledged with id.
func (h *Hist) Boot(p int, name, id string) {
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name}})
	h.Add(history.Op{Process: p, Type: history.OK, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name, ID: id}, Code: 202})
}

// BootAs is a boot via n1 completed as typ with code (no id).
func (h *Hist) BootAs(p int, name, typ string, code int) {
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name}})
	h.Add(history.Op{Process: p, Type: typ, F: history.FBoot, Node: "n1", Value: history.OpValue{Name: name}, Code: code, Error: "HTTP error"})
}

// Del is a delete via n2 completed as typ with code (404: not found).
func (h *Hist) Del(p int, id, name string, typ string, code int) {
	v := history.OpValue{ID: id, Name: name}
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FDelete, Node: "n2", Value: v})
	v.NotFound = code == 404
	h.Add(history.Op{Process: p, Type: typ, F: history.FDelete, Node: "n2", Value: v, Code: code})
}

// Read is a linearizable show via n3 that saw status and task (status
// "": not found).
func (h *Hist) Read(p int, id, name, status, task string) {
	v := history.OpValue{ID: id, Name: name}
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v})
	if status == "" {
		v.NotFound = true
	} else {
		v.Server = &history.ServerState{ID: id, Name: name, Status: status, Task: task}
	}
	h.Add(history.Op{Process: p, Type: history.OK, F: history.FRead, Node: "n3", Consistency: history.Linearizable, Value: v, Code: 200})
}

// List is a linearizable list via n1 that saw servers.
func (h *Hist) List(p int, servers ...history.ServerState) {
	h.Add(history.Op{Process: p, Type: history.Invoke, F: history.FList, Node: "n1", Consistency: history.Linearizable})
	h.Add(history.Op{Process: p, Type: history.OK, F: history.FList, Node: "n1", Consistency: history.Linearizable, Value: history.OpValue{Servers: servers}})
}

// The servers and nodes of the synthetic histories.
const (
	IDA   = "aaaaaaaa-0000-4000-8000-000000000001"
	IDB   = "bbbbbbbb-0000-4000-8000-000000000002"
	NodeX = "11111111-0000-4000-8000-00000000000x"
	NodeY = "22222222-0000-4000-8000-00000000000y"
)

// CleanHistory: A is booted, built and deleted; B is booted and stays.
func CleanHistory() *Hist {
	h := &Hist{}
	h.Boot(0, "a", IDA)
	h.Read(1, IDA, "a", "BUILD", "scheduling")
	h.Read(1, IDA, "a", "ACTIVE", "")
	h.Boot(2, "b", IDB)
	h.Read(1, IDB, "b", "ACTIVE", "")
	h.Del(0, IDA, "a", history.OK, 204)
	h.Read(1, IDA, "a", "ACTIVE", "deleting")
	h.Read(1, IDA, "a", "", "")
	h.Del(2, IDA, "a", history.Fail, 404)
	h.List(3, history.ServerState{ID: IDB, Name: "b", Status: "ACTIVE", Host: "n1", Node: NodeX})
	return h
}

// Ptr points at s.
func Ptr(s string) *string { return &s }

// CleanFinal is the final state that goes with CleanHistory: A deleted,
// B ACTIVE on node X, owned by n1, on three peers.
func CleanFinal() history.FinalState {
	b := history.ServerState{ID: IDB, Name: "b", Status: "ACTIVE", Host: "n1", Node: NodeX}
	return history.FinalState{
		Servers:      []history.ServerState{{ID: IDA, Name: "a", Status: "DELETED"}, b},
		Views:        map[string][]history.ServerState{"n1": {b}, "n2": {b}, "n3": {b}},
		Owners:       map[string]history.Owner{IDB: {ServerID: IDB, Host: "n1", HostUp: true, Status: "ACTIVE", Node: NodeX}},
		Hosts:        []history.Host{{Name: "n1", Status: "up"}, {Name: "n2", Status: "up"}, {Name: "n3", Status: "up"}},
		Reservations: []history.Reservation{{NodeUUID: NodeX, ServerID: IDB, Host: "n1", AllocationUUID: IDB}},
		IronicNodes: []client.IronicNode{
			{UUID: NodeX, ProvisionState: "active", InstanceUUID: Ptr(IDB), AllocationUUID: Ptr(IDB)},
			{UUID: NodeY, ProvisionState: "available"},
		},
		Allocations: []client.IronicAllocation{{UUID: IDB, NodeUUID: Ptr(NodeX), State: "active"}},
		Running:     map[string]bool{"n1": true, "n2": true, "n3": true},
		Quiesced:    true,
	}
}

// Window spans the events added by during, with a millisecond either side.
func Window(h *Hist, name, detail string, during func()) history.Window {
	w := history.Window{Name: name, Detail: detail, Start: h.T + int64(time.Millisecond)/2}
	during()
	w.End = h.T + int64(time.Millisecond)/2
	return w
}
