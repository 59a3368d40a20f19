package check

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/client"
	"github.com/corral-dev/corral/jepsen/history"
	"github.com/corral-dev/corral/jepsen/history/historytest"
)

func lin(t *testing.T, ops []history.Op) LinResult {
	t.Helper()
	return Linearizable(history.NewIndex(ops), false, 10*time.Second, "")
}

func final(ops []history.Op, fs history.FinalState) FinalResult {
	return Final(history.NewIndex(ops), fs)
}

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
	h := historytest.CleanHistory()
	if r := lin(t, h.Ops); !r.Valid {
		t.Fatalf("linearizability: %+v", r)
	}
	if r := final(h.Ops, historytest.CleanFinal()); !r.Valid {
		t.Fatalf("final state: %+v", r.Anomalies)
	}
}

func TestUnknownOutcomesAreTolerated(t *testing.T) {
	h := historytest.CleanHistory()
	h.BootAs(4, "c", history.Info, 0) // never applied
	h.BootAs(5, "d", history.Info, 0) // applied: shows up later
	h.List(3, history.ServerState{ID: "dddd", Name: "d", Status: "BUILD"},
		history.ServerState{ID: historytest.IDB, Name: "b", Status: "ACTIVE", Host: "n1", Node: historytest.NodeX})
	h.Del(6, historytest.IDB, "b", history.Info, 0) // unknown delete of B, not applied
	h.Read(1, historytest.IDB, "b", "ACTIVE", "")
	fs := historytest.CleanFinal()
	if r := lin(t, h.Ops); !r.Valid {
		t.Fatalf("linearizability: %+v", r)
	}
	d := history.ServerState{ID: "dddd", Name: "d", Status: "ERROR", Host: "n2"}
	fs.Servers = append(fs.Servers, d)
	fs.Owners["dddd"] = history.Owner{ServerID: "dddd", Host: "n2", HostUp: true}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], d)
	}
	if r := final(h.Ops, fs); !r.Valid {
		t.Fatalf("final state: %+v", r.Anomalies)
	}
}

func TestLostAcknowledgedBoot(t *testing.T) {
	h := historytest.CleanHistory()
	wantKind(t, final(history.InjectLostAck(h.Ops), historytest.CleanFinal()), "lost-boot")
	// Deleted without anyone asking is lost too.
	fs := historytest.CleanFinal()
	fs.Servers[1].Status = "DELETED"
	fs.Views = map[string][]history.ServerState{}
	fs.Reservations, fs.IronicNodes, fs.Allocations = nil, nil, nil
	wantKind(t, final(h.Ops, fs), "lost-boot")
}

func TestLostFromLinearizableList(t *testing.T) {
	h := historytest.CleanHistory()
	h.List(3) // B acknowledged, never deleted, missing
	if r := lin(t, h.Ops); r.Valid || len(r.Illegal) != 1 || r.Illegal[0].Key != "b" {
		t.Fatalf("want b illegal, got %+v", r)
	}
}

func TestDoubleBookedNode(t *testing.T) {
	h := historytest.CleanHistory()
	h.Boot(4, "c", "cccc")
	fs := historytest.CleanFinal()
	c := history.ServerState{ID: "cccc", Name: "c", Status: "ACTIVE", Host: "n2", Node: historytest.NodeX}
	fs.Servers = append(fs.Servers, c)
	fs.Owners["cccc"] = history.Owner{ServerID: "cccc", Host: "n2", HostUp: true}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], c)
	}
	fs.Reservations = append(fs.Reservations, history.Reservation{NodeUUID: historytest.NodeX, ServerID: "cccc", Host: "n2"})
	wantKind(t, final(h.Ops, fs), "double-booked-node")

	// The same in Ironic only: two allocations on one node.
	fs = historytest.CleanFinal()
	fs.Allocations = append(fs.Allocations, client.IronicAllocation{UUID: historytest.IDA, NodeUUID: historytest.Ptr(historytest.NodeX), State: "active"})
	r := final(h.Ops, fs)
	wantKind(t, r, "ironic-double-booked-node")
	wantKind(t, r, "ironic-leak")
}

func TestResurrectedServer(t *testing.T) {
	h := historytest.CleanHistory()
	h.Read(1, historytest.IDA, "a", "ACTIVE", "") // A was deleted and read as gone
	if r := lin(t, h.Ops); r.Valid {
		t.Fatal("a resurrected server passed")
	}
	ops, ok := history.InjectResurrection(historytest.CleanHistory().Ops)
	if !ok {
		t.Fatal("nothing to resurrect")
	}
	if r := lin(t, ops); r.Valid {
		t.Fatal("the injected resurrection passed")
	}
}

func TestModelRejects(t *testing.T) {
	cases := map[string]func(h *historytest.Hist){
		"status goes back":         func(h *historytest.Hist) { h.Read(1, historytest.IDB, "b", "BUILD", "") },
		"delete 404 of a live one": func(h *historytest.Hist) { h.Del(5, historytest.IDB, "b", history.Fail, 404) },
		"read 404 of a live one":   func(h *historytest.Hist) { h.Read(5, historytest.IDB, "b", "", "") },
		"delete nobody asked for":  func(h *historytest.Hist) { h.Read(5, historytest.IDB, "b", "ACTIVE", "deleting") },
		"acked delete undone": func(h *historytest.Hist) {
			h.Del(5, historytest.IDB, "b", history.OK, 204)
			h.Read(5, historytest.IDB, "b", "ACTIVE", "")
		},
	}
	for name, f := range cases {
		h := historytest.CleanHistory()
		f(h)
		if r := lin(t, h.Ops); r.Valid {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestOwnerIsDeadHost(t *testing.T) {
	h := historytest.CleanHistory()
	fs := historytest.CleanFinal()
	fs.Hosts[0].Status = "down"
	wantKind(t, final(h.Ops, fs), "owner-down")
	fs = historytest.CleanFinal()
	fs.Owners[historytest.IDB] = history.Owner{ServerID: historytest.IDB, Epoch: 3, Status: "ACTIVE"}
	for i := range fs.Servers {
		fs.Servers[i].Host = ""
	}
	for p := range fs.Views {
		fs.Views[p][0].Host = ""
	}
	fs.Reservations[0].Host = ""
	wantKind(t, final(h.Ops, fs), "no-owner")

	fs = historytest.CleanFinal()
	fs.Running["n1"] = false
	wantKind(t, final(h.Ops, fs), "owner-dead")
	fs = historytest.CleanFinal()
	fs.Views["n2"][0].Host = "n2"
	wantKind(t, final(h.Ops, fs), "replica-divergence")
}

func TestFinalStateAnomalies(t *testing.T) {
	h := historytest.CleanHistory()
	h.BootAs(7, "e", history.Fail, 503)
	fs := historytest.CleanFinal()
	fs.Servers = append(fs.Servers, history.ServerState{ID: "eeee", Name: "e", Status: "DELETED"})
	wantKind(t, final(h.Ops, fs), "failed-boot-applied")

	h = historytest.CleanHistory()
	h.Del(5, historytest.IDB, "b", history.OK, 204)
	wantKind(t, final(h.Ops, historytest.CleanFinal()), "delete-not-applied")

	fs = historytest.CleanFinal()
	fs.Allocations = append(fs.Allocations, client.IronicAllocation{UUID: historytest.IDA, State: "error"})
	wantKind(t, final(historytest.CleanHistory().Ops, fs), "ironic-leak")

	fs = historytest.CleanFinal()
	fs.IronicNodes[1].ProvisionState = "active"
	wantKind(t, final(historytest.CleanHistory().Ops, fs), "ironic-orphan-node")

	fs = historytest.CleanFinal()
	fs.IronicNodes[1].InstanceUUID = historytest.Ptr(historytest.IDB)
	wantKind(t, final(historytest.CleanHistory().Ops, fs), "ironic-server-multi-node")

	fs = historytest.CleanFinal()
	fs.Servers[1].Status, fs.Servers[1].Task = "BUILD", "spawning"
	for p := range fs.Views {
		fs.Views[p][0].Status, fs.Views[p][0].Task = "BUILD", "spawning"
	}
	wantKind(t, final(historytest.CleanHistory().Ops, fs), "stuck")

	h = historytest.CleanHistory()
	h.Add(history.Op{Process: 9, Type: history.Invoke, F: history.FBoot, Node: "n5", Value: history.OpValue{Name: "f"}})
	h.Add(history.Op{Process: 9, Type: history.Fail, F: history.FBoot, Node: "n5", Value: history.OpValue{Name: "f"}, Code: 400,
		Error: `HTTP 400: {"badRequest":{"code":400,"message":"bad request: Flavor jepsen could not be found"}}`})
	wantKind(t, final(h.Ops, historytest.CleanFinal()), "stale-flavor-rejection")
}

func TestAvailability(t *testing.T) {
	h := historytest.CleanHistory()
	h.BootAs(8, "g", history.Fail, 503)
	win := []history.Window{{Name: "kill", Start: h.T - int64(time.Millisecond), End: h.T + 1}}
	h.Boot(8, "h", "hhhh")
	r := Availability(history.NewIndex(h.Ops), win, time.Second, "")
	if !r.Valid || len(r.Windows) != 1 || r.Windows[0].Writes != 1 || r.Windows[0].WritesOK != 0 {
		t.Fatalf("%+v", r)
	}
	if r.Windows[0].RecoveryS < 0 {
		t.Fatalf("no recovery measured: %+v", r.Windows[0])
	}
	if r := Availability(history.NewIndex(h.Ops), win, time.Minute, "never recovered"); r.Valid {
		t.Fatal("a cluster that never recovered passed")
	}
}

// A boot that failed scheduling is ERROR with no owner, as in Nova.
func TestUnscheduledErrorServerIsValid(t *testing.T) {
	h := historytest.CleanHistory()
	h.Boot(4, "u", "uuuu")
	fs := historytest.CleanFinal()
	u := history.ServerState{ID: "uuuu", Name: "u", Status: "ERROR"}
	fs.Servers = append(fs.Servers, u)
	fs.Owners["uuuu"] = history.Owner{ServerID: "uuuu", Status: "ERROR"}
	for p := range fs.Views {
		fs.Views[p] = append(fs.Views[p], u)
	}
	r := final(h.Ops, fs)
	if !r.Valid || r.Unscheduled != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestNothingBuiltIsInvalid(t *testing.T) {
	h := &historytest.Hist{}
	h.Boot(0, "a", historytest.IDA)
	h.Read(1, historytest.IDA, "a", "ERROR", "")
	fs := historytest.CleanFinal()
	fs.Servers = []history.ServerState{{ID: historytest.IDA, Name: "a", Status: "ERROR"}}
	fs.Views = map[string][]history.ServerState{"n1": fs.Servers}
	fs.Owners = map[string]history.Owner{historytest.IDA: {ServerID: historytest.IDA, Status: "ERROR"}}
	fs.Reservations, fs.Allocations = nil, nil
	fs.IronicNodes = fs.IronicNodes[1:]
	wantKind(t, final(h.Ops, fs), "nothing-built")
}
