package fsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// stoppedRebuild is an adopted server, stopped, with a rebuild to img-8
// requested (request req-rb) and the history kept.
func stoppedRebuild(t *testing.T) (*applier, Server) {
	t.Helper()
	a := adoptFixture(t).withFeatures()
	c := adoptCmd(2)
	a.s.Prepare(c)
	a.ok(c)
	s, _ := a.s.Server(sid(1))
	a.ok(&RequestServerAction{Meta: at(3), ID: s.ID, Kind: ActionStop})
	a.ok(&FinishServerAction{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})
	a.ok(&RebuildServer{Meta: Meta{At: t0.Add(5 * time.Second), RequestID: "req-rb"}, ID: s.ID, ImageRef: "img-8"})
	s, _ = a.s.Server(s.ID)
	if s.Status != StatusShutoff || s.TaskState != TaskRebuilding || s.Action == nil || s.Action.Kind != ActionRebuild {
		t.Fatalf("a rebuild of a stopped server keeps it SHUTOFF while it rebuilds (Nova: vm_state stopped, task rebuilding): %+v", s)
	}
	return a, s
}

// A rebuild of a stopped server ends stopped, as Nova's compute manager
// ends it: once the node is redeployed, the server is ACTIVE and
// powering-off (one entry), its owner powers the node off (an intent of
// the stop), and the server is SHUTOFF with no task. Both steps are
// events of the one rebuild action, newest last here.
func TestRebuildOfAStoppedServerEndsStopped(t *testing.T) {
	a, s := stoppedRebuild(t)
	asked := s.Action.RequestedAt
	stop := func(sec int) *StopAfterRebuild {
		return &StopAfterRebuild{Meta: at(sec), ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: asked}
	}
	a.refuses(ErrFenced,
		&StopAfterRebuild{ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, RequestedAt: asked},
		&StopAfterRebuild{ID: s.ID, Host: "other", Epoch: s.Epoch, RequestedAt: asked})
	a.refuses(ErrConflict, &StopAfterRebuild{ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: asked.Add(-time.Second)})
	a.refuses(ErrNotFound, &StopAfterRebuild{ID: "nope", Host: s.Host, Epoch: s.Epoch, RequestedAt: asked})

	got := a.ok(stop(6)).(Server)
	if got.Status != StatusActive || got.TaskState != TaskPoweringOff || got.ImageRef != "img-8" || got.Image() != "img-8" ||
		got.Action == nil || got.Action.Kind != ActionRebuildStop || !got.Action.RequestedAt.Equal(asked) ||
		got.Action.RequestID != "req-rb" || got.Action.Intent != nil || !got.UpdatedAt.Equal(at(6).At) {
		t.Fatalf("after the redeploy: %+v (action %+v), want ACTIVE, powering-off, img-8, the stop of the same request", got, got.Action)
	}
	if v := snapshotFormat(t, a.s); v != snapshotVersionRebuildStop {
		t.Fatalf("a server stopping after its rebuild is written in format %d, want %d (older peers cannot carry it out)", v, snapshotVersionRebuildStop)
	}
	// Once only; nor can a user ask for it.
	a.refuses(ErrConflict, stop(7))
	a.refuses(ErrInvalid, &RequestServerAction{ID: s.ID, Kind: ActionRebuildStop})
	a.refuses(ErrConflict, &FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})

	a.ok(&StartServerAction{Meta: at(7), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuildStop, RequestedAt: asked,
		Step: "power off", Witness: "w"})
	a.ok(&FinishServerAction{Meta: at(8), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuildStop, RequestedAt: asked})
	got, _ = a.s.Server(s.ID)
	if got.Status != StatusShutoff || got.TaskState != "" || got.Action != nil || got.ImageRef != "img-8" {
		t.Fatalf("after the stop: %+v, want SHUTOFF on img-8", got)
	}
	if v := snapshotFormat(t, a.s); v >= snapshotVersionRebuildStop {
		t.Fatalf("once done, snapshots are in format %d, want one older peers read again", v)
	}

	acts := a.s.InstanceActions(s.ID)
	want := fmt.Sprintf("create[compute__do_build_and_run_instance Success %[1]s] stop[compute_stop_instance Success %[1]s] "+
		"rebuild[compute_rebuild_instance Success %[1]s][compute_stop_instance Success %[1]s]", s.Host)
	if got := actionNames(acts); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	rb := acts[len(acts)-1]
	if rb.RequestID != "req-rb" || rb.Message != "" || !rb.UpdatedAt.Equal(at(8).At) ||
		!rb.Events[0].StartTime.Equal(at(5).At) || !rb.Events[1].StartTime.Equal(at(6).At) ||
		!rb.Events[0].FinishTime.Equal(at(8).At) || !rb.Events[1].FinishTime.Equal(at(8).At) {
		t.Fatalf("rebuild action: %+v", rb)
	}
}

// A failed power-off after the rebuild fails both events of the rebuild,
// as the stop's error ends Nova's rebuild_instance too; a reset drops it.
func TestRebuildOfAStoppedServerFailures(t *testing.T) {
	a, s := stoppedRebuild(t)
	asked := s.Action.RequestedAt
	a.ok(&StopAfterRebuild{Meta: at(6), ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: asked})
	a.ok(&FinishServerAction{Meta: at(7), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuildStop, RequestedAt: asked,
		Fault: &Fault{Code: 500, Message: "BMC unreachable"}})
	got, _ := a.s.Server(s.ID)
	if got.Status != StatusError || got.Fault == nil || got.TaskState != "" || got.ImageRef != "img-8" {
		t.Fatalf("after a failed power-off: %+v", got)
	}
	acts := a.s.InstanceActions(s.ID)
	rb := acts[len(acts)-1]
	if rb.Message != EventResultError || len(rb.Events) != 2 || rb.Events[0].Result != EventResultError ||
		rb.Events[1].Result != EventResultError || rb.Events[1].Traceback != "BMC unreachable" {
		t.Fatalf("failed rebuild action: %+v", rb)
	}

	// From ERROR a rebuild ends ACTIVE, as Nova's (only a stopped
	// server is stopped again).
	a.ok(&RebuildServer{Meta: at(8), ID: s.ID, ImageRef: "img-9"})
	s, _ = a.s.Server(s.ID)
	a.refuses(ErrConflict, &StopAfterRebuild{ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: s.Action.RequestedAt})
	a.ok(&FinishServerAction{Meta: at(9), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild})

	// A reset while it stops drops the stop; both events end in Error.
	a.ok(&RequestServerAction{Meta: at(10), ID: s.ID, Kind: ActionStop})
	a.ok(&FinishServerAction{Meta: at(11), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})
	a.ok(&RebuildServer{Meta: at(12), ID: s.ID, ImageRef: "img-10"})
	s, _ = a.s.Server(s.ID)
	a.ok(&StopAfterRebuild{Meta: at(13), ID: s.ID, Host: s.Host, Epoch: s.Epoch, RequestedAt: s.Action.RequestedAt})
	a.ok(&ResetServerState{Meta: at(14), ID: s.ID, Status: StatusActive})
	got, _ = a.s.Server(s.ID)
	if got.Status != StatusActive || got.Action != nil || got.TaskState != "" || got.ImageRef != "img-10" {
		t.Fatalf("after the reset: %+v", got)
	}
	acts = a.s.InstanceActions(s.ID)
	rb = acts[len(acts)-2]
	if rb.Action != ActionRebuild || len(rb.Events) != 2 || rb.Events[0].Result != EventResultError || rb.Events[1].Result != EventResultError {
		t.Fatalf("the rebuild a reset dropped: %+v", rb)
	}
	r := a.apply(&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuildStop})
	if !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("the dropped stop's outcome: %v", r.Err)
	}
}
