package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// An interface attach or detach is requested on an ACTIVE server (task
// and action, the request kept in its port record), refused as Nova
// refuses it and then changes nothing, finished by the owner at its epoch
// with the port attached or a fault, the server's status unchanged either
// way; the server's history has the action and its event's outcome; a
// snapshot carries the request.
func TestInterfaceActions(t *testing.T) {
	a, s := activeServer(t)
	a.withFeatures()
	a.ok(&RecordServerPort{Meta: at(3), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p1", NetworkID: "net-a"}})
	before := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionAttachInterface}, ErrInvalid},
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionAttachInterface, NetworkID: "n", PortID: "p"}, ErrInvalid},
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionAttachInterface, PortID: "p", FixedIP: "192.0.2.9"}, ErrInvalid},
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionAttachInterface, NetworkID: "n", FixedIP: "nope"}, ErrInvalid},
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionAttachInterface, PortID: "p1"}, ErrConflict}, // already the server's
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionDetachInterface, PortID: "p9"}, ErrNotFound},
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionDetachInterface, PortID: "p1", NetworkID: "n"}, ErrInvalid},
		{&RequestInterfaceAction{ID: s.ID, Kind: "explode", PortID: "p1"}, ErrInvalid},
		{&RequestInterfaceAction{ID: sid(9), Kind: ActionDetachInterface, PortID: "p1"}, ErrNotFound},
		{&RequestServerAction{ID: s.ID, Kind: ActionAttachInterface}, ErrInvalid}, // only through its own command
		{&FinishInterfaceAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAttachInterface}, ErrConflict},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.c.Type(), tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a refused interface command changed the state")
	}

	req := &RequestInterfaceAction{Meta: at(4), ID: s.ID, Kind: ActionAttachInterface, NetworkID: "net-b", FixedIP: "192.0.2.9"}
	req.RequestID = "req-attach-1"
	a.ok(req)
	got, _ := a.s.Server(s.ID)
	if got.TaskState != TaskAttachingInterface || got.Action == nil || got.Action.Kind != ActionAttachInterface || got.Status != StatusActive {
		t.Fatalf("after the request: %+v", got)
	}
	want := &InterfaceRequest{Kind: ActionAttachInterface, NetworkID: "net-b", FixedIP: "192.0.2.9", RequestID: "req-attach-1", RequestedAt: t0.Add(4e9), Had: []string{"p1"}}
	if in := a.s.ServerNet(s.ID).Interface; !reflect.DeepEqual(in, want) {
		t.Fatalf("request %+v, want %+v", in, want)
	}
	busy := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RequestInterfaceAction{ID: s.ID, Kind: ActionDetachInterface, PortID: "p1"}, ErrConflict}, // a task in progress
		{&RequestServerAction{ID: s.ID, Kind: ActionReboot}, ErrConflict},
		{&FinishInterfaceAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, Kind: ActionAttachInterface, RequestedAt: t0.Add(4e9)}, ErrFenced},
		{&FinishInterfaceAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAttachInterface, RequestedAt: t0.Add(3e9)}, ErrConflict},
		{&FinishInterfaceAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionDetachInterface, RequestedAt: t0.Add(4e9)}, ErrConflict},
		{&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAttachInterface}, ErrConflict},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.c.Type(), tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != busy {
		t.Fatal("a refused interface command changed the state")
	}
	r := New()
	if err := r.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !bytes.Equal(snapshotBytes(t, r), snapshotBytes(t, a.s)) {
		t.Fatal("the restored request differs")
	}
	a.ok(&FinishInterfaceAction{Meta: at(5), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAttachInterface, RequestedAt: t0.Add(4e9), PortID: "p2"})
	if got, _ := a.s.Server(s.ID); got.TaskState != "" || got.Action != nil || got.Status != StatusActive {
		t.Fatalf("after the attach: %+v", got)
	}
	if in := a.s.ServerNet(s.ID).Interface; in == nil || !in.Done || in.PortID != "p2" || in.Fault != "" {
		t.Fatalf("outcome %+v", in)
	}

	a.ok(&RequestInterfaceAction{Meta: at(6), ID: s.ID, Kind: ActionDetachInterface, PortID: "p1"})
	a.ok(&FinishInterfaceAction{Meta: at(7), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionDetachInterface, RequestedAt: t0.Add(6e9),
		Fault: "Failed to detach network adapter device from " + s.ID})
	if got, _ := a.s.Server(s.ID); got.TaskState != "" || got.Status != StatusActive || got.Fault != nil {
		t.Fatalf("after the failed detach: %+v", got)
	}
	if in := a.s.ServerNet(s.ID).Interface; in == nil || !in.Done || in.Fault == "" {
		t.Fatalf("outcome %+v", in)
	}
	if got := actionNames(a.s.InstanceActions(s.ID)); !bytes.Contains([]byte(got),
		[]byte("attach_interface[compute_attach_interface Success "+s.Host+"] detach_interface[compute_detach_interface Error "+s.Host+"]")) {
		t.Fatalf("history %s", got)
	}
}
