package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// withFeatures turns every feature on, as the leader does once every peer
// knows them.
func (a *applier) withFeatures() *applier {
	a.tb.Helper()
	for _, name := range sortedKeys(FeatureCommands) {
		a.ok(&EnableFeature{Meta: at(0), Name: name})
	}
	return a
}

func actionNames(acts []InstanceAction) string {
	var out []string
	for _, a := range acts {
		s := a.Action
		for _, e := range a.Events {
			s += fmt.Sprintf("[%s %s %s]", e.Event, e.Result, e.Host)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestEnableFeature(t *testing.T) {
	a := newApplier(t)
	if a.s.FeatureEnabled(FeatureInstanceActions) || len(a.s.Features()) != 0 {
		t.Fatal("a new store has features on")
	}
	before := a.s.Digest()
	if r := a.apply(&EnableFeature{Name: "telepathy"}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("unknown feature: %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("a refused feature changed the state")
	}
	a.ok(&EnableFeature{Name: FeatureInstanceActions})
	a.ok(&EnableFeature{Name: FeatureInstanceActions}) // again: nothing changes
	if got := a.s.Features(); len(got) != 1 || got[0] != FeatureInstanceActions {
		t.Fatalf("features %v", got)
	}
}

func TestHistoryOfAServer(t *testing.T) {
	a := bareMetalFixture(t).withFeatures()
	c := &CreateServer{Meta: Meta{At: t0.Add(10e9), RequestID: "req-create"}, ID: sid(1), Name: "web", FlavorID: "bm", ImageRef: "img", UserID: "u1", ProjectID: "p1"}
	a.s.Prepare(c)
	s := a.ok(c).(Server)
	a.ok(&ReserveNode{Meta: at(11), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode, AllocationUUID: s.ID})
	a.ok(&SetServerTask{Meta: at(12), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusActive})
	stop := &RequestServerActionWithID{RequestServerAction{Meta: Meta{At: t0.Add(13e9), RequestID: "req-stop"}, ID: s.ID, Kind: ActionStop}}
	a.ok(stop)
	a.ok(&FinishServerAction{Meta: at(14), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})
	a.ok(&RequestServerAction{Meta: Meta{At: t0.Add(15e9), RequestID: "req-start"}, ID: s.ID, Kind: ActionStart})
	a.ok(&FinishServerAction{Meta: at(16), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStart,
		Fault: &Fault{Code: 500, Message: "power on failed"}})
	a.ok(&UpdateServer{Meta: at(17), ID: s.ID, Name: ptr("web-2")})
	a.ok(&UpdateServer{Meta: at(18), ID: s.ID, Locked: ptr(true)})
	a.ok(&UpdateServer{Meta: at(19), ID: s.ID, Locked: ptr(false)})
	// The owner dies: a failover, then the delete on the new owner.
	a.ok(&SetHostStatus{Meta: at(20), Name: s.Host, Status: HostDown})
	re := &ReassignServers{Meta: at(21), From: s.Host, Reason: ReasonHostDown}
	a.s.Prepare(re)
	a.ok(re)
	moved, _ := a.s.Server(s.ID)
	a.ok(&DeleteServer{Meta: Meta{At: t0.Add(22e9), RequestID: "req-delete"}, ID: s.ID})
	a.ok(&ReleaseNode{Meta: at(23), ServerID: s.ID, Host: moved.Host, Epoch: moved.Epoch, NodeUUID: s.ClaimedNode})
	a.ok(&SetServerTask{Meta: at(24), ID: s.ID, Host: moved.Host, Epoch: moved.Epoch, Status: StatusDeleted})

	acts := a.s.InstanceActions(s.ID)
	want := fmt.Sprintf("create[compute__do_build_and_run_instance Success %[1]s] stop[compute_stop_instance Success %[1]s] "+
		"start[compute_start_instance Error %[1]s] lock unlock failover[corral_reassign_owner Success %[2]s] "+
		"delete[compute_terminate_instance Success %[2]s]", s.Host, moved.Host)
	if got := actionNames(acts); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	for i, want := range []string{"req-create", "req-stop", "req-start"} {
		if acts[i].RequestID != want || acts[i].UserID != "u1" || acts[i].ProjectID != "p1" {
			t.Errorf("action %d: %+v, want request %s of u1 in p1", i, acts[i], want)
		}
	}
	if acts[2].Message != EventResultError || acts[2].Events[0].Traceback != "power on failed" || !acts[2].UpdatedAt.Equal(t0.Add(16e9)) {
		t.Errorf("failed start: %+v", acts[2])
	}
	if f := acts[5]; !strings.HasPrefix(f.Message, "host down: from "+s.Host) || !strings.HasPrefix(f.RequestID, "req-") {
		t.Errorf("failover: %+v", f)
	}
	if d := acts[6]; d.RequestID != "req-delete" || !d.Events[0].FinishTime.Equal(t0.Add(24e9)) {
		t.Errorf("delete: %+v", d)
	}

	// Every replica keeps the same history: a snapshot carries it.
	b := New()
	if err := b.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if b.Digest() != a.s.Digest() || actionNames(b.InstanceActions(s.ID)) != want {
		t.Fatal("the restored history differs")
	}
	// Purged with the server.
	a.ok(&PurgeServers{Meta: at(30), Before: t0.Add(30e9), IDs: []string{s.ID}})
	if got := a.s.InstanceActions(s.ID); len(got) != 0 {
		t.Fatalf("history outlives the purge: %v", got)
	}
}

func TestHistoryOfARefusedBuild(t *testing.T) {
	a := serverFixture(t).withFeatures()
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", NoValidHost: "No valid host was found."})
	acts := a.s.InstanceActions("s1")
	if actionNames(acts) != "create[conductor_schedule_and_build_instances Error ]" || acts[0].Events[0].Traceback != "No valid host was found." {
		t.Fatalf("refused build: %+v", acts)
	}
	a.ok(&DeleteServer{Meta: at(2), ID: "s1"}) // never scheduled: deleted at once
	if got := actionNames(a.s.InstanceActions("s1")); !strings.HasSuffix(got, " delete[compute_terminate_instance Success ]") {
		t.Fatalf("delete of an unscheduled server: %s", got)
	}
}

func TestHistoryBounded(t *testing.T) {
	a := serverFixture(t).withFeatures()
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", Host: "h1"})
	for i := range MaxServerActions + 5 {
		a.ok(&UpdateServer{Meta: at(2 + i), ID: "s1", Locked: ptr(i%2 == 0)})
	}
	acts := a.s.InstanceActions("s1")
	last := t0.Add(time.Duration(MaxServerActions+6) * time.Second)
	if len(acts) != MaxServerActions || acts[0].Action == ActionCreate || !acts[len(acts)-1].StartTime.Equal(last) {
		t.Fatalf("%d actions kept, first %s", len(acts), acts[0].Action)
	}
}

func TestHistoryOffUntilEnabled(t *testing.T) {
	a := serverFixture(t)
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", Host: "h1"})
	if len(a.s.InstanceActions("s1")) != 0 {
		t.Fatal("history kept while the feature is off")
	}
	// Nothing of the features in a snapshot while none is on: older peers
	// read it.
	data := snapshotBytes(t, a.s)
	for _, rt := range []RecordType{RecordFeatures, RecordInstanceActions, RecordServerGroup} {
		if hasRecord(t, data, rt) {
			t.Errorf("snapshot holds a record of type %d while empty", rt)
		}
	}
	a.withFeatures()
	a.ok(&UpdateServer{Meta: at(2), ID: "s1", Locked: ptr(true)})
	data = snapshotBytes(t, a.s)
	for _, rt := range []RecordType{RecordFeatures, RecordInstanceActions} {
		if !hasRecord(t, data, rt) {
			t.Errorf("snapshot lacks its record of type %d", rt)
		}
	}
}

// hasRecord reports whether the snapshot holds a record of type rt.
func hasRecord(t *testing.T, data []byte, rt RecordType) bool {
	t.Helper()
	r := bytes.NewReader(data[len(SnapshotMagic)+2:])
	for range 3 { // applied index, server and node counts
		if _, err := binary.ReadUvarint(r); err != nil {
			t.Fatal(err)
		}
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatal(err)
		}
		if RecordType(b) == RecordEnd {
			return false
		}
		if RecordType(b) == rt {
			return true
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Seek(int64(n), io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
	}
}
