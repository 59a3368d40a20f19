package fsm

import (
	"errors"
	"fmt"
	"testing"
)

func TestResetServerStateDropsTheActionInProgress(t *testing.T) {
	a, s := activeServer(t)
	a.withFeatures()
	before := a.s.Digest()
	for _, tc := range []struct {
		c    *ResetServerState
		want error
	}{
		{&ResetServerState{ID: s.ID, Status: StatusShutoff}, ErrInvalid},
		{&ResetServerState{ID: s.ID, Status: "active"}, ErrInvalid},
		{&ResetServerState{ID: "nope", Status: StatusError}, ErrNotFound},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("refused resets changed the state")
	}

	a.ok(&RequestServerAction{Meta: at(3), ID: s.ID, Kind: ActionRebuild, ImageRef: "img-8"})
	a.ok(&StartServerAction{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild,
		RequestedAt: t0.Add(3e9), Step: "rebuild", Witness: "active"})
	a.ok(&ResetServerState{Meta: Meta{At: t0.Add(5e9), RequestID: "req-reset"}, ID: s.ID, Status: StatusError})
	got, _ := a.s.Server(s.ID)
	if got.Status != StatusError || got.TaskState != "" || got.Action != nil || got.Host != s.Host || got.Epoch != s.Epoch {
		t.Fatalf("after the reset: %+v", got)
	}
	if got.ImageRef != "img-8" || got.Image() != "img-8" {
		t.Fatalf("a reset rebuild keeps the image it was given, as Nova's: %+v", got)
	}
	// The owner's outcome of the dropped rebuild is stale: refused, as
	// with or without the action's time; the admin's state stands.
	for _, fin := range []*FinishServerAction{
		{Meta: at(6), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild, RequestedAt: t0.Add(3e9)},
		{Meta: at(6), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild},
	} {
		if r := a.apply(fin); !errors.Is(r.Err, ErrConflict) {
			t.Fatalf("stale outcome: %v", r.Err)
		}
	}
	// Nova rebuilds a server in ERROR: a new rebuild, whose outcome is
	// taken, while an outcome naming the dropped one still is not.
	a.ok(&RequestServerAction{Meta: at(7), ID: s.ID, Kind: ActionRebuild, ImageRef: "img-9"})
	if r := a.apply(&FinishServerAction{Meta: at(8), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild,
		RequestedAt: t0.Add(3e9)}); !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("outcome of the dropped rebuild over the new one: %v", r.Err)
	}
	a.ok(&FinishServerAction{Meta: at(9), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild, RequestedAt: t0.Add(7e9)})
	if got, _ := a.s.Server(s.ID); got.Status != StatusActive || got.ImageRef != "img-9" {
		t.Fatalf("rebuilt from ERROR: %+v", got)
	}
	// A failed rebuild keeps the image the server had, as every version
	// applies FinishServerAction; it is shown while the rebuild runs.
	a.ok(&RequestServerAction{Meta: at(10), ID: s.ID, Kind: ActionRebuild, ImageRef: "img-10"})
	if got, _ := a.s.Server(s.ID); got.ImageRef != "img-9" || got.Image() != "img-10" {
		t.Fatalf("rebuilding: %+v", got)
	}
	a.ok(&FinishServerAction{Meta: at(10), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild,
		Fault: &Fault{Code: 500, Message: "deploy failed"}})
	if got, _ := a.s.Server(s.ID); got.Status != StatusError || got.ImageRef != "img-9" || got.Image() != "img-9" {
		t.Fatalf("failed rebuild: %+v", got)
	}
	a.ok(&ResetServerState{Meta: at(11), ID: s.ID, Status: StatusActive})
	if got, _ := a.s.Server(s.ID); got.Status != StatusActive || got.Fault == nil || got.Fault.Message != "deploy failed" {
		t.Fatalf("reset to active keeps the fault, as Nova: %+v", got)
	}

	acts := a.s.InstanceActions(s.ID)
	want := fmt.Sprintf("rebuild[compute_rebuild_instance Error %[1]s] resetState rebuild[compute_rebuild_instance Success %[1]s] "+
		"rebuild[compute_rebuild_instance Error %[1]s] resetState", s.Host)
	if got := actionNames(acts[len(acts)-5:]); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	if r := acts[len(acts)-4]; r.RequestID != "req-reset" || len(r.Events) != 0 {
		t.Errorf("reset action: %+v", r)
	}
}

func TestResetServerStateOfABuildAndADelete(t *testing.T) {
	a := bareMetalFixture(t).withFeatures()
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "web", FlavorID: "bm", ImageRef: "img"}
	a.s.Prepare(c)
	s := a.ok(c).(Server)
	a.ok(&ReserveNode{Meta: at(2), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode, AllocationUUID: s.ID})
	a.ok(&ResetServerState{Meta: at(3), ID: s.ID, Status: StatusError})
	if got, _ := a.s.Server(s.ID); got.Status != StatusError || got.TaskState != "" || got.NodeUUID != s.ClaimedNode || len(got.Claim) == 0 {
		t.Fatalf("a build reset to ERROR keeps its node and claim: %+v", got)
	}
	// The build goes on: its outcome is the server's.
	a.ok(&SetServerTask{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusActive})
	if got, _ := a.s.Server(s.ID); got.Status != StatusActive {
		t.Fatalf("the build's outcome: %+v", got)
	}
	if got := actionNames(a.s.InstanceActions(s.ID)); got != fmt.Sprintf("create[compute__do_build_and_run_instance Error %s] resetState", s.Host) {
		t.Fatalf("history: %s", got)
	}
	// A requested delete stays requested.
	a.ok(&DeleteServer{Meta: at(5), ID: s.ID})
	a.ok(&ResetServerState{Meta: at(6), ID: s.ID, Status: StatusError})
	if got, _ := a.s.Server(s.ID); got.Status != StatusError || got.TaskState != TaskDeleting {
		t.Fatalf("reset during a delete: %+v", got)
	}
	a.ok(&ReleaseNode{Meta: at(7), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode})
	a.ok(&SetServerTask{Meta: at(8), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusDeleted})
	if r := a.apply(&ResetServerState{Meta: at(9), ID: s.ID, Status: StatusActive}); !errors.Is(r.Err, ErrNotFound) {
		t.Fatalf("reset of a deleted server: %v", r.Err)
	}
}
