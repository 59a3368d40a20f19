package fsm

import (
	"errors"
	"testing"
)

func TestReserveNodeAndTask(t *testing.T) {
	a := bareMetalFixture(t)
	srv := a.boot(sid(1), "bm")
	rn := func(task string, epoch uint64) *ReserveNodeAndTask {
		return &ReserveNodeAndTask{ReserveNode: ReserveNode{Meta: at(2), ServerID: srv.ID, Host: srv.Host, Epoch: epoch,
			NodeUUID: srv.ClaimedNode, AllocationUUID: "a1"}, TaskState: task}
	}
	// A bad task state or a stale epoch changes nothing.
	for _, c := range []struct {
		cmd  *ReserveNodeAndTask
		want error
	}{{rn("", 1), ErrInvalid}, {rn(TaskDeleting, 1), ErrInvalid}, {rn(TaskSpawning, 2), ErrConflict}} {
		if r := a.apply(c.cmd); !errors.Is(r.Err, c.want) {
			t.Fatalf("%+v: %v, want %v", c.cmd, r.Err, c.want)
		}
		if s, _ := a.s.Server(srv.ID); s.NodeUUID != "" || s.TaskState != srv.TaskState {
			t.Fatalf("refused command changed the server: %+v", s)
		}
	}
	got := a.ok(rn(TaskSpawning, 1)).(Server)
	if got.NodeUUID != srv.ClaimedNode || got.AllocationUUID != "a1" || got.TaskState != TaskSpawning || !got.UpdatedAt.Equal(at(2).At) {
		t.Fatalf("after ReserveNodeAndTask: %+v", got)
	}

	// A delete requested before the reservation stays requested.
	srv2 := a.boot(sid(2), "bm")
	a.ok(&DeleteServer{Meta: at(3), ID: srv2.ID})
	got = a.ok(&ReserveNodeAndTask{ReserveNode: ReserveNode{Meta: at(4), ServerID: srv2.ID, Host: srv2.Host, Epoch: 1,
		NodeUUID: srv2.ClaimedNode}, TaskState: TaskSpawning}).(Server)
	if got.TaskState != TaskDeleting || got.NodeUUID != srv2.ClaimedNode {
		t.Fatalf("reservation after a delete request: task %q node %q, want deleting with the node", got.TaskState, got.NodeUUID)
	}
}

func TestKnownCommands(t *testing.T) {
	list := KnownCommands()
	for _, typ := range CommandTypes() {
		if !CommandKnownIn(list, typ) {
			t.Errorf("%s missing from %q", typ, list)
		}
	}
	if list != "1-27,32-33,40-49,51-53,56-61,63-65" {
		t.Errorf("KnownCommands() = %q", list)
	}
	for _, c := range []struct {
		list string
		t    CommandType
		want bool
	}{{list, 28, false}, {list, 40, true}, {list, 45, true}, {list, 49, true}, {list, 50, false}, {"1,2,33", 3, false}, {"", 1, false}, {"1,2,33", 33, true}, {"1-26,32-33", 26, true},
		{"1-26,32-33", 31, false}, {"1-26,32-33", 32, true}, {"x,5", 5, true}, {"4-x", 4, false}} {
		if got := CommandKnownIn(c.list, c.t); got != c.want {
			t.Errorf("CommandKnownIn(%q, %d) = %t", c.list, c.t, got)
		}
	}
}
