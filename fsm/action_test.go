package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// activeServer is an adopted ACTIVE server on an Ironic node.
func activeServer(t *testing.T) (*applier, Server) {
	t.Helper()
	a := adoptFixture(t)
	c := adoptCmd(2)
	a.s.Prepare(c)
	a.ok(c)
	s, err := a.s.Server(sid(1))
	if err != nil || s.Status != StatusActive {
		t.Fatalf("adopted: %+v, %v", s, err)
	}
	return a, s
}

func TestServerActionLifecycle(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&RequestServerAction{Meta: at(3), ID: s.ID, Kind: ActionStop})
	got, _ := a.s.Server(s.ID)
	if got.TaskState != TaskPoweringOff || got.Action == nil || got.Action.Kind != ActionStop || got.Status != StatusActive {
		t.Fatalf("after the stop request: %+v", got)
	}
	before := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RequestServerAction{ID: s.ID, Kind: ActionReboot}, ErrConflict}, // a task in progress
		{&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, Kind: ActionStop}, ErrFenced},
		{&FinishServerAction{ID: s.ID, Host: "other", Epoch: s.Epoch, Kind: ActionStop}, ErrFenced},
		{&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStart}, ErrConflict},
		{&RequestServerAction{ID: "nope", Kind: ActionStop}, ErrNotFound},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("rejected action commands changed the state")
	}
	a.ok(&FinishServerAction{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})
	if got, _ := a.s.Server(s.ID); got.Status != StatusShutoff || got.TaskState != "" || got.Action != nil {
		t.Fatalf("stopped: %+v", got)
	}
	for _, k := range []string{ActionStop, ActionReboot} {
		if r := a.apply(&RequestServerAction{ID: s.ID, Kind: k}); !errors.Is(r.Err, ErrConflict) {
			t.Errorf("%s of a stopped server: %v", k, r.Err)
		}
	}
	a.ok(&RequestServerAction{Meta: at(5), ID: s.ID, Kind: ActionStart})
	a.ok(&FinishServerAction{Meta: at(6), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStart})
	if got, _ := a.s.Server(s.ID); got.Status != StatusActive {
		t.Fatalf("started: %+v", got)
	}

	if r := a.apply(&RequestServerAction{ID: s.ID, Kind: ActionRebuild}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("rebuild without an image: %v", r.Err)
	}
	a.ok(&RequestServerAction{Meta: at(7), ID: s.ID, Kind: ActionRebuild, ImageRef: "img-8"})
	if got, _ := a.s.Server(s.ID); got.ImageRef != "img-7" || got.Image() != "img-8" || got.TaskState != TaskRebuilding {
		t.Fatalf("the image changes when the rebuild is done, shown at once: %+v", got)
	}
	a.ok(&FinishServerAction{Meta: at(8), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild})
	if got, _ := a.s.Server(s.ID); got.ImageRef != "img-8" || got.Status != StatusActive || got.TaskState != "" {
		t.Fatalf("rebuilt: %+v", got)
	}

	a.ok(&RequestServerAction{Meta: at(9), ID: s.ID, Kind: ActionRebootHard})
	a.ok(&FinishServerAction{Meta: at(10), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebootHard,
		Fault: &Fault{Code: 500, Message: "BMC unreachable"}})
	if got, _ := a.s.Server(s.ID); got.Status != StatusError || got.Fault == nil || got.Fault.Message != "BMC unreachable" {
		t.Fatalf("failed reboot: %+v", got)
	}
}

func TestUpdateServerRenameAndLock(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&UpdateServer{Meta: at(3), ID: s.ID, Name: ptr("db-2"), Locked: ptr(true), LockedReason: "audit"})
	got, _ := a.s.Server(s.ID)
	if got.Name != "db-2" || !got.Locked || got.LockedReason != "audit" {
		t.Fatalf("after update: %+v", got)
	}
	before := a.s.Digest()
	if r := a.apply(&RequestServerAction{ID: s.ID, Kind: ActionStop}); !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("stop of a locked server: %v", r.Err)
	}
	if r := a.apply(&UpdateServer{ID: s.ID, Name: ptr("")}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("empty name: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("rejected commands changed the state")
	}
	a.ok(&RequestServerAction{Meta: at(4), ID: s.ID, Kind: ActionStop, Admin: true})
	a.ok(&UpdateServer{Meta: at(5), ID: s.ID, Locked: ptr(false)})
	if got, _ := a.s.Server(s.ID); got.Locked || got.LockedReason != "" || got.Name != "db-2" {
		t.Fatalf("after unlock: %+v", got)
	}
}

// An owner's intent is fenced by its epoch and names the action in
// progress; it is kept with the action until the action ends.
func TestServerActionIntent(t *testing.T) {
	a, s := activeServer(t)
	req := &RequestServerActionWithID{RequestServerAction{Meta: Meta{At: t0.Add(3 * time.Second), RequestID: "req-9"}, ID: s.ID, Kind: ActionRebuild, ImageRef: "img-2"}}
	a.ok(req)
	got, _ := a.s.Server(s.ID)
	if got.Action == nil || got.Action.RequestID != "req-9" || got.Action.Intent != nil {
		t.Fatalf("after the request: %+v", got.Action)
	}
	asked := got.Action.RequestedAt
	intent := func(m Meta, host string, epoch uint64, kind string, asked time.Time, step string) *StartServerAction {
		return &StartServerAction{Meta: m, ID: s.ID, Host: host, Epoch: epoch, Kind: kind, RequestedAt: asked, Step: step, Witness: "w1"}
	}
	before := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{intent(at(4), s.Host, s.Epoch+1, ActionRebuild, asked, "rebuild"), ErrFenced},
		{intent(at(4), "other", s.Epoch, ActionRebuild, asked, "rebuild"), ErrFenced},
		{intent(at(4), s.Host, s.Epoch, ActionStop, asked, "power off"), ErrConflict},
		{intent(at(4), s.Host, s.Epoch, ActionRebuild, asked.Add(-time.Second), "rebuild"), ErrConflict}, // an earlier action
		{intent(at(4), s.Host, s.Epoch, ActionRebuild, asked, ""), ErrInvalid},
		{intent(at(4), s.Host, s.Epoch, ActionRebuild, asked, strings.Repeat("x", 65)), ErrInvalid},
		{&StartServerAction{ID: "nope", Kind: ActionRebuild, Step: "rebuild"}, ErrNotFound},
		{&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild, RequestedAt: asked.Add(time.Second)}, ErrConflict},
		{&RequestServerActionWithID{RequestServerAction{Meta: Meta{RequestID: strings.Repeat("r", 129)}, ID: s.ID, Kind: ActionStop}}, ErrInvalid},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("rejected intents changed the state")
	}
	a.ok(intent(at(4), s.Host, s.Epoch, ActionRebuild, asked, "rebuild"))
	got, _ = a.s.Server(s.ID)
	in := got.Action.Intent
	if in == nil || in.Host != s.Host || in.Epoch != s.Epoch || in.Step != "rebuild" || in.Witness != "w1" || !in.At.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("intent: %+v", in)
	}
	// What a snapshot carries of the action (format 3 while it holds an
	// intent), a restore gives back.
	r := New()
	var buf bytes.Buffer
	if _, err := a.s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(buf.Bytes()[len(SnapshotMagic):]); v != 3 {
		t.Fatalf("a state holding an intent is written in format %d, want 3", v)
	}
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if rs, _ := r.Server(s.ID); !reflect.DeepEqual(rs.Action, got.Action) || r.Digest() != a.s.Digest() {
		t.Fatalf("restored action %+v, want %+v", rs.Action, got.Action)
	}
	a.ok(&FinishServerAction{Meta: at(5), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild, RequestedAt: asked})
	if got, _ := a.s.Server(s.ID); got.Action != nil || got.ImageRef != "img-2" || got.Status != StatusActive {
		t.Fatalf("rebuilt: %+v", got)
	}
	// Once no action holds an intent or a request id, snapshots are in
	// format 2 again, which older peers read.
	buf.Reset()
	if _, err := a.s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(buf.Bytes()[len(SnapshotMagic):]); v != 2 {
		t.Fatalf("a state without intents is written in format %d, want 2", v)
	}
}
