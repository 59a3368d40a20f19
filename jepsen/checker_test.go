package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hist builds synthetic histories, one millisecond per event.
type hist struct {
	ops []Op
	t   int64
}

func (h *hist) add(op Op) {
	h.t += int64(time.Millisecond)
	op.Time, op.Index = h.t, len(h.ops)
	h.ops = append(h.ops, op)
}

func (h *hist) boot(p int, name, id string) {
	h.add(Op{Process: p, Type: Invoke, F: FBoot, Node: "n1", Value: OpValue{Name: name}})
	h.add(Op{Process: p, Type: OK, F: FBoot, Node: "n1", Value: OpValue{Name: name, ID: id}, Code: 202})
}

func (h *hist) bootAs(p int, name, typ string, code int) {
	h.add(Op{Process: p, Type: Invoke, F: FBoot, Node: "n1", Value: OpValue{Name: name}})
	h.add(Op{Process: p, Type: typ, F: FBoot, Node: "n1", Value: OpValue{Name: name}, Code: code, Error: "HTTP error"})
}

func (h *hist) del(p int, id, name string, typ string, code int) {
	v := OpValue{ID: id, Name: name}
	h.add(Op{Process: p, Type: Invoke, F: FDelete, Node: "n2", Value: v})
	v.NotFound = code == 404
	h.add(Op{Process: p, Type: typ, F: FDelete, Node: "n2", Value: v, Code: code})
}

func (h *hist) read(p int, id, name, status, task string) {
	v := OpValue{ID: id, Name: name}
	h.add(Op{Process: p, Type: Invoke, F: FRead, Node: "n3", Consistency: Linearizable, Value: v})
	if status == "" {
		v.NotFound = true
	} else {
		v.Server = &ServerState{ID: id, Name: name, Status: status, Task: task}
	}
	h.add(Op{Process: p, Type: OK, F: FRead, Node: "n3", Consistency: Linearizable, Value: v, Code: 200})
}

func (h *hist) list(p int, servers ...ServerState) {
	h.add(Op{Process: p, Type: Invoke, F: FList, Node: "n1", Consistency: Linearizable})
	h.add(Op{Process: p, Type: OK, F: FList, Node: "n1", Consistency: Linearizable, Value: OpValue{Servers: servers}})
}

const (
	idA   = "aaaaaaaa-0000-4000-8000-000000000001"
	idB   = "bbbbbbbb-0000-4000-8000-000000000002"
	nodeX = "11111111-0000-4000-8000-00000000000x"
	nodeY = "22222222-0000-4000-8000-00000000000y"
)

// cleanHistory: A is booted, built and deleted; B is booted and stays.
func cleanHistory() *hist {
	h := &hist{}
	h.boot(0, "a", idA)
	h.read(1, idA, "a", "BUILD", "scheduling")
	h.read(1, idA, "a", "ACTIVE", "")
	h.boot(2, "b", idB)
	h.read(1, idB, "b", "ACTIVE", "")
	h.del(0, idA, "a", OK, 204)
	h.read(1, idA, "a", "ACTIVE", "deleting")
	h.read(1, idA, "a", "", "")
	h.del(2, idA, "a", Fail, 404)
	h.list(3, ServerState{ID: idB, Name: "b", Status: "ACTIVE", Host: "n1", Node: nodeX})
	return h
}

func ptr(s string) *string { return &s }

func cleanFinal() FinalState {
	b := ServerState{ID: idB, Name: "b", Status: "ACTIVE", Host: "n1", Node: nodeX}
	return FinalState{
		Servers:      []ServerState{{ID: idA, Name: "a", Status: "DELETED"}, b},
		Views:        map[string][]ServerState{"n1": {b}, "n2": {b}, "n3": {b}},
		Owners:       map[string]OwnerView{idB: {ServerID: idB, Host: "n1", HostUp: true, Status: "ACTIVE", Node: nodeX}},
		Hosts:        []HostView{{Name: "n1", Status: "up"}, {Name: "n2", Status: "up"}, {Name: "n3", Status: "up"}},
		Reservations: []Reservation{{NodeUUID: nodeX, ServerID: idB, Host: "n1", AllocationUUID: idB}},
		IronicNodes: []IronicNode{
			{UUID: nodeX, ProvisionState: "active", InstanceUUID: ptr(idB), AllocationUUID: ptr(idB)},
			{UUID: nodeY, ProvisionState: "available"},
		},
		Allocations: []IronicAllocation{{UUID: idB, NodeUUID: ptr(nodeX), State: "active"}},
		Running:     map[string]bool{"n1": true, "n2": true, "n3": true},
		Quiesced:    true,
	}
}

func lin(t *testing.T, ops []Op) LinResult {
	t.Helper()
	return CheckLinearizable(indexHistory(ops), false, 10*time.Second, "")
}

func final(ops []Op, fs FinalState) FinalResult { return CheckFinal(indexHistory(ops), fs) }

func wantKind(t *testing.T, r FinalResult, kind string) {
	t.Helper()
	if r.Valid {
		t.Fatalf("verdict valid, want %s", kind)
	}
	if r.Counts[kind] == 0 {
		t.Fatalf("no %s anomaly; got %+v", kind, r.Anomalies)
	}
}

func TestCleanHistoryIsValid(t *testing.T) {
	h := cleanHistory()
	if r := lin(t, h.ops); !r.Valid {
		t.Fatalf("linearizability: %+v", r)
	}
	if r := final(h.ops, cleanFinal()); !r.Valid {
		t.Fatalf("final state: %+v", r.Anomalies)
	}
}

func TestUnknownOutcomesAreTolerated(t *testing.T) {
	h := cleanHistory()
	h.bootAs(4, "c", Info, 0) // never applied
	h.bootAs(5, "d", Info, 0) // applied: shows up later
	h.list(3, ServerState{ID: "dddd", Name: "d", Status: "BUILD"},
		ServerState{ID: idB, Name: "b", Status: "ACTIVE", Host: "n1", Node: nodeX})
	h.del(6, idB, "b", Info, 0) // unknown delete of B, not applied
	h.read(1, idB, "b", "ACTIVE", "")
	fs := cleanFinal()
	if r := lin(t, h.ops); !r.Valid {
		t.Fatalf("linearizability: %+v", r)
	}
	d := ServerState{ID: "dddd", Name: "d", Status: "ERROR", Host: "n2"}
	fs.Servers = append(fs.Servers, d)
	fs.Owners["dddd"] = OwnerView{ServerID: "dddd", Host: "n2", HostUp: true}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], d)
	}
	if r := final(h.ops, fs); !r.Valid {
		t.Fatalf("final state: %+v", r.Anomalies)
	}
}

func TestLostAcknowledgedBoot(t *testing.T) {
	h := cleanHistory()
	wantKind(t, final(InjectLostAck(h.ops), cleanFinal()), "lost-boot")
	// Deleted without anyone asking is lost too.
	fs := cleanFinal()
	fs.Servers[1].Status = "DELETED"
	fs.Views = map[string][]ServerState{}
	fs.Reservations, fs.IronicNodes, fs.Allocations = nil, nil, nil
	wantKind(t, final(h.ops, fs), "lost-boot")
}

func TestLostFromLinearizableList(t *testing.T) {
	h := cleanHistory()
	h.list(3) // B acknowledged, never deleted, missing
	if r := lin(t, h.ops); r.Valid || len(r.Illegal) != 1 || r.Illegal[0].Key != "b" {
		t.Fatalf("want b illegal, got %+v", r)
	}
}

func TestDoubleBookedNode(t *testing.T) {
	h := cleanHistory()
	h.boot(4, "c", "cccc")
	fs := cleanFinal()
	c := ServerState{ID: "cccc", Name: "c", Status: "ACTIVE", Host: "n2", Node: nodeX}
	fs.Servers = append(fs.Servers, c)
	fs.Owners["cccc"] = OwnerView{ServerID: "cccc", Host: "n2", HostUp: true}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], c)
	}
	fs.Reservations = append(fs.Reservations, Reservation{NodeUUID: nodeX, ServerID: "cccc", Host: "n2"})
	wantKind(t, final(h.ops, fs), "double-booked-node")

	// The same in Ironic only: two allocations on one node.
	fs = cleanFinal()
	fs.Allocations = append(fs.Allocations, IronicAllocation{UUID: idA, NodeUUID: ptr(nodeX), State: "active"})
	r := final(h.ops, fs)
	wantKind(t, r, "ironic-double-booked-node")
	wantKind(t, r, "ironic-leak")
}

func TestResurrectedServer(t *testing.T) {
	h := cleanHistory()
	h.read(1, idA, "a", "ACTIVE", "") // A was deleted and read as gone
	if r := lin(t, h.ops); r.Valid {
		t.Fatal("a resurrected server passed")
	}
	ops, ok := InjectResurrection(cleanHistory().ops)
	if !ok {
		t.Fatal("nothing to resurrect")
	}
	if r := lin(t, ops); r.Valid {
		t.Fatal("the injected resurrection passed")
	}
}

func TestModelRejects(t *testing.T) {
	cases := map[string]func(h *hist){
		"status goes back":         func(h *hist) { h.read(1, idB, "b", "BUILD", "") },
		"delete 404 of a live one": func(h *hist) { h.del(5, idB, "b", Fail, 404) },
		"read 404 of a live one":   func(h *hist) { h.read(5, idB, "b", "", "") },
		"delete nobody asked for":  func(h *hist) { h.read(5, idB, "b", "ACTIVE", "deleting") },
		"acked delete undone": func(h *hist) {
			h.del(5, idB, "b", OK, 204)
			h.read(5, idB, "b", "ACTIVE", "")
		},
	}
	for name, f := range cases {
		h := cleanHistory()
		f(h)
		if r := lin(t, h.ops); r.Valid {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestOwnerIsDeadHost(t *testing.T) {
	h := cleanHistory()
	fs := cleanFinal()
	fs.Hosts[0].Status = "down"
	wantKind(t, final(h.ops, fs), "owner-down")
	fs = cleanFinal()
	fs.Owners[idB] = OwnerView{ServerID: idB, Epoch: 3, Status: "ACTIVE"}
	for i := range fs.Servers {
		fs.Servers[i].Host = ""
	}
	for p := range fs.Views {
		fs.Views[p][0].Host = ""
	}
	fs.Reservations[0].Host = ""
	wantKind(t, final(h.ops, fs), "no-owner")

	fs = cleanFinal()
	fs.Running["n1"] = false
	wantKind(t, final(h.ops, fs), "owner-dead")
	fs = cleanFinal()
	fs.Views["n2"][0].Host = "n2"
	wantKind(t, final(h.ops, fs), "replica-divergence")
}

func TestFinalStateAnomalies(t *testing.T) {
	h := cleanHistory()
	h.bootAs(7, "e", Fail, 503)
	fs := cleanFinal()
	fs.Servers = append(fs.Servers, ServerState{ID: "eeee", Name: "e", Status: "DELETED"})
	wantKind(t, final(h.ops, fs), "failed-boot-applied")

	h = cleanHistory()
	h.del(5, idB, "b", OK, 204)
	wantKind(t, final(h.ops, cleanFinal()), "delete-not-applied")

	fs = cleanFinal()
	fs.Allocations = append(fs.Allocations, IronicAllocation{UUID: idA, State: "error"})
	wantKind(t, final(cleanHistory().ops, fs), "ironic-leak")

	fs = cleanFinal()
	fs.IronicNodes[1].ProvisionState = "active"
	wantKind(t, final(cleanHistory().ops, fs), "ironic-orphan-node")

	fs = cleanFinal()
	fs.IronicNodes[1].InstanceUUID = ptr(idB)
	wantKind(t, final(cleanHistory().ops, fs), "ironic-server-multi-node")

	fs = cleanFinal()
	fs.Servers[1].Status, fs.Servers[1].Task = "BUILD", "spawning"
	for p := range fs.Views {
		fs.Views[p][0].Status, fs.Views[p][0].Task = "BUILD", "spawning"
	}
	wantKind(t, final(cleanHistory().ops, fs), "stuck")

	h = cleanHistory()
	h.add(Op{Process: 9, Type: Invoke, F: FBoot, Node: "n5", Value: OpValue{Name: "f"}})
	h.add(Op{Process: 9, Type: Fail, F: FBoot, Node: "n5", Value: OpValue{Name: "f"}, Code: 400,
		Error: `HTTP 400: {"badRequest":{"code":400,"message":"bad request: Flavor jepsen could not be found"}}`})
	wantKind(t, final(h.ops, cleanFinal()), "stale-flavor-rejection")
}

func TestAvailability(t *testing.T) {
	h := cleanHistory()
	h.bootAs(8, "g", Fail, 503)
	win := []Window{{Name: "kill", Start: h.t - int64(time.Millisecond), End: h.t + 1}}
	h.boot(8, "h", "hhhh")
	r := CheckAvailability(indexHistory(h.ops), win, time.Second, "")
	if !r.Valid || len(r.Windows) != 1 || r.Windows[0].Writes != 1 || r.Windows[0].WritesOK != 0 {
		t.Fatalf("%+v", r)
	}
	if r.Windows[0].RecoveryS < 0 {
		t.Fatalf("no recovery measured: %+v", r.Windows[0])
	}
	if r := CheckAvailability(indexHistory(h.ops), win, time.Minute, "never recovered"); r.Valid {
		t.Fatal("a cluster that never recovered passed")
	}
}

// TestInjectFlagFailsTheRun re-checks a clean results folder, then again
// with -inject-lost-ack and -inject-resurrection: each must exit 1, and
// the folder's own history is left as it was.
func TestInjectFlagFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	if err := WriteHistory(filepath.Join(dir, "history.jsonl"), cleanHistory().ops); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"final.json": cleanFinal(), "windows.json": []Window{},
		"verdict.json": Verdict{Run: RunInfo{Started: "test"}}} {
		if err := writeJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("clean recheck exited %d", code)
	}
	for _, flag := range []string{"-inject-lost-ack", "-inject-resurrection"} {
		if code := realMain([]string{"-recheck", dir, flag}); code != 1 {
			t.Fatalf("%s: exited %d, want 1", flag, code)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "recheck", "report.md"))
		if !strings.Contains(string(b), "INVALID") {
			t.Fatalf("%s: report does not say INVALID", flag)
		}
	}
	if code := realMain([]string{"-recheck", dir}); code != 0 {
		t.Fatalf("the injections leaked into the saved history: clean recheck exited %d", code)
	}
}

// A boot that failed scheduling is ERROR with no owner, as in Nova.
func TestUnscheduledErrorServerIsValid(t *testing.T) {
	h := cleanHistory()
	h.boot(4, "u", "uuuu")
	fs := cleanFinal()
	u := ServerState{ID: "uuuu", Name: "u", Status: "ERROR"}
	fs.Servers = append(fs.Servers, u)
	fs.Owners["uuuu"] = OwnerView{ServerID: "uuuu", Status: "ERROR"}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], u)
	}
	r := final(h.ops, fs)
	if !r.Valid || r.Unscheduled != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestNothingBuiltIsInvalid(t *testing.T) {
	h := &hist{}
	h.boot(0, "a", idA)
	h.read(1, idA, "a", "ERROR", "")
	fs := cleanFinal()
	fs.Servers = []ServerState{{ID: idA, Name: "a", Status: "ERROR"}}
	fs.Views = map[string][]ServerState{"n1": fs.Servers}
	fs.Owners = map[string]OwnerView{idA: {ServerID: idA, Status: "ERROR"}}
	fs.Reservations, fs.Allocations = nil, nil
	fs.IronicNodes = fs.IronicNodes[1:]
	wantKind(t, final(h.ops, fs), "nothing-built")
}
