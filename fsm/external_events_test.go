package fsm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// bootBuilding boots a server that is still building (its create event
// open).
func (a *applier) bootBuilding(id string) Server {
	a.tb.Helper()
	c := &CreateServer{Meta: Meta{At: t0.Add(10 * time.Second), RequestID: "req-create"}, ID: id, Name: "s", FlavorID: "bm", ImageRef: "img"}
	a.s.Prepare(c)
	return a.ok(c).(Server)
}

func extEvents(id string, names ...string) []ExternalEvent {
	var out []ExternalEvent
	for _, n := range names {
		out = append(out, ExternalEvent{Server: id, Name: n, Status: ExternalCompleted, Tag: "port-1"})
	}
	return out
}

// Accepted external events are events of the server's current action:
// placed before the owner's event while it is open, so that the owner
// still finishes it; a repeat of the latest one updates it; failed ones
// are in Error; at most MaxExternalEventsPerAction are kept, the oldest
// dropped. The history's record carries them through a snapshot.
func TestExternalEventsAreEventsOfTheCurrentAction(t *testing.T) {
	a := bareMetalFixture(t).withFeatures()
	s := a.bootBuilding(sid(1))
	a.ok(&RecordExternalEvents{Meta: at(20), Events: extEvents(s.ID, ExternalVIFPlugged)})
	a.ok(&RecordExternalEvents{Meta: at(21), Events: []ExternalEvent{
		{Server: s.ID, Name: ExternalNetworkChanged, Status: ExternalCompleted},
		{Server: s.ID, Name: ExternalNetworkChanged, Status: ExternalFailed, Tag: "port-1"},
	}})
	acts := a.s.InstanceActions(s.ID)
	if got := actionNames(acts); got != "create[network-vif-plugged Success "+s.Host+"][network-changed Error "+s.Host+"][compute__do_build_and_run_instance  "+s.Host+"]" {
		t.Fatalf("history %s", got)
	}
	ch := acts[0].Events[1]
	if !ch.StartTime.Equal(t0.Add(21*time.Second)) || !ch.FinishTime.Equal(t0.Add(21*time.Second)) || acts[0].Message != "" ||
		!acts[0].UpdatedAt.Equal(t0.Add(21*time.Second)) {
		t.Fatalf("the repeated event %+v, action %+v", ch, acts[0])
	}
	// The owner finishes its build event as before.
	a.ok(&ReserveNode{Meta: at(29), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.ClaimedNode, AllocationUUID: s.ID})
	a.ok(&SetServerTask{Meta: at(30), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: StatusActive})
	acts = a.s.InstanceActions(s.ID)
	if last := acts[0].Events[2]; last.Event != "compute__do_build_and_run_instance" || last.Result != EventResultSuccess {
		t.Fatalf("the build's event %+v after external events", last)
	}
	// Once finished, events go at the end.
	a.ok(&RecordExternalEvents{Meta: at(31), Events: extEvents(s.ID, ExternalVIFUnplugged)})
	if got := a.s.InstanceActions(s.ID)[0].Events[3].Event; got != ExternalVIFUnplugged {
		t.Fatalf("event after the finished build: %s", got)
	}
	// Bounded: alternating names never collapse; the oldest go first.
	for i := range 2 * MaxExternalEventsPerAction {
		name := ExternalVIFPlugged
		if i%2 == 1 {
			name = ExternalVIFUnplugged
		}
		a.ok(&RecordExternalEvents{Meta: at(40 + i), Events: extEvents(s.ID, name)})
	}
	evs := a.s.InstanceActions(s.ID)[0].Events
	if len(evs) != MaxExternalEventsPerAction+1 || evs[0].Event != "compute__do_build_and_run_instance" {
		t.Fatalf("%d events, the first %s; want the build's and %d external ones", len(evs), evs[0].Event, MaxExternalEventsPerAction)
	}
	if last := evs[len(evs)-1]; !last.FinishTime.Equal(t0.Add(time.Duration(40+2*MaxExternalEventsPerAction-1) * time.Second)) {
		t.Fatalf("the newest event is not kept: %+v", last)
	}

	r := New()
	if err := r.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !reflect.DeepEqual(r.InstanceActions(s.ID), a.s.InstanceActions(s.ID)) {
		t.Fatal("the restored history differs")
	}
}

// A server deleted, unknown or without an owner, or a cluster without
// instance actions, records nothing; an entry that breaks the rules is
// refused and changes nothing.
func TestExternalEventsRecordOnlyWhatTheyMay(t *testing.T) {
	a := bareMetalFixture(t)
	s := a.bootBuilding(sid(1))
	if got := a.ok(&RecordExternalEvents{Meta: at(20), Events: extEvents(s.ID, ExternalVIFPlugged)}); got != 0 {
		t.Fatalf("recorded %v without the instance actions feature", got)
	}
	a.withFeatures()
	a.ok(&CreateServer{Meta: at(21), ID: sid(2), Name: "nohost", FlavorID: "bm", ImageRef: "img"}) // ERROR, no host
	gone := a.bootBuilding(sid(3))
	a.ok(&DeleteServer{Meta: at(22), ID: gone.ID})
	a.ok(&SetServerTask{Meta: at(23), ID: gone.ID, Host: gone.Host, Epoch: gone.Epoch, Status: StatusDeleted})
	before := a.s.Digest()
	got := a.ok(&RecordExternalEvents{Meta: at(24), Events: []ExternalEvent{
		{Server: sid(2), Name: ExternalNetworkChanged, Status: ExternalCompleted},
		{Server: gone.ID, Name: ExternalVIFDeleted, Status: ExternalCompleted, Tag: "p"},
		{Server: sid(9), Name: ExternalNetworkChanged, Status: ExternalCompleted},
	}})
	if got != 0 || a.s.Digest() != before {
		t.Fatalf("recorded %v events for servers without an owner, deleted or unknown", got)
	}

	live := a.bootBuilding(sid(4))
	before = a.s.Digest()
	for _, bad := range [][]ExternalEvent{
		nil,
		{{Server: live.ID, Name: "network-teleported", Status: ExternalCompleted}},
		{{Server: live.ID, Name: ExternalNetworkChanged, Status: "done"}},
		{{Server: "", Name: ExternalNetworkChanged, Status: ExternalCompleted}},
		{{Server: live.ID, Name: ExternalNetworkChanged, Status: ExternalCompleted, Tag: strings.Repeat("t", 256)}},
		append(extEvents(live.ID, ExternalVIFPlugged), ExternalEvent{Server: live.ID, Name: "bogus", Status: ExternalCompleted}),
		make([]ExternalEvent, MaxExternalEventsPerEntry+1),
	} {
		if r := a.apply(&RecordExternalEvents{Meta: at(25), Events: bad}); !errors.Is(r.Err, ErrInvalid) {
			t.Errorf("%d events %.80v: %v, want ErrInvalid", len(bad), bad, r.Err)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a refused entry changed the state")
	}
}
