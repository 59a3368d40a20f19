package reaper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

const (
	live    = "00000000-0000-4000-9000-00000000000a"
	gone    = "00000000-0000-4000-9000-00000000000b"
	purged  = "00000000-0000-4000-9000-00000000000c"
	pending = "00000000-0000-4000-9000-00000000000d"
)

// The ports corral created whose server is deleted are deleted once the
// leader has seen them so for the grace, and so is a port corral created
// for a live server that the server's record does not hold (a create
// Neutron carried out after its owner had given up on it and made
// another), counted and logged with the port, the server and the reason;
// the recorded port of a live server, ports given back or taken by
// another kind of device, ports corral did not create, and the ports of a
// server the cluster does not know (another cluster's, or purged) are
// never touched.
func TestReaperDeletesPortsOfServersThatAreGone(t *testing.T) {
	e := newEnv(t)
	e.c.boot(live, fsm.Network{UUID: "net-a"})
	e.c.apply(&fsm.RecordServerPort{ID: live, Host: "h1", Epoch: 1, Port: fsm.ServerPort{ID: "p-live", NetworkID: "net-a"}})
	e.c.boot(gone)
	e.c.remove(gone, t0.Add(time.Minute))
	e.nt.add("p-live", neutron.CreatedByCorral, live)
	e.nt.add("p-late", neutron.CreatedByCorral, live)
	e.nt.add("p-gone", neutron.CreatedByCorral, gone)
	e.nt.add("p-purged", neutron.CreatedByCorral, purged)
	e.nt.add("p-empty", neutron.CreatedByCorral, "")
	e.nt.touch("p-empty", func(p *neutron.PortState) { p.DeviceOwner = "" })
	e.nt.add("p-dhcp", neutron.CreatedByCorral, gone)
	e.nt.touch("p-dhcp", func(p *neutron.PortState) { p.DeviceOwner = "network:dhcp" })
	e.nt.add("p-other", "", gone) // not corral's: never listed

	e.pass(t) // first seen
	e.clk.advance(grace - time.Second)
	e.pass(t) // within the grace
	for _, id := range []string{"p-gone", "p-late"} {
		if _, ok := e.nt.port(id); !ok {
			t.Fatalf("%s deleted within its grace", id)
		}
	}
	if got := e.metric(t, "corral_neutron_ports_orphaned", nil); got != 2 {
		t.Errorf("corral_neutron_ports_orphaned = %v, want 2", got)
	}
	e.clk.advance(time.Second)
	e.pass(t)
	for _, id := range []string{"p-gone", "p-late"} {
		if _, ok := e.nt.port(id); ok {
			t.Errorf("%s outlived its grace", id)
		}
	}
	for _, id := range []string{"p-live", "p-purged", "p-empty", "p-dhcp", "p-other"} {
		if p, ok := e.nt.port(id); !ok || p.RevisionNumber > 2 {
			t.Errorf("%s was touched: %+v %v", id, p, ok)
		}
	}
	if got := e.reaped(t, ActionDelete, ReasonDeleted); got != 1 {
		t.Errorf("reaped{delete, server_deleted} = %v, want 1", got)
	}
	if got := e.reaped(t, ActionDelete, ReasonUnrecorded); got != 1 {
		t.Errorf("reaped{delete, unrecorded} = %v, want 1", got)
	}
	if got := e.metric(t, "corral_neutron_ports_orphaned", nil); got != 0 {
		t.Errorf("corral_neutron_ports_orphaned = %v after the reap, want 0", got)
	}
	recs := e.logs.records(t, "deleted a Neutron port")
	if len(recs) != 2 {
		t.Fatalf("%d reap records, want 2: %v", len(recs), recs)
	}
	want := map[string]string{"p-gone": gone + " " + ReasonDeleted, "p-late": live + " " + ReasonUnrecorded}
	for _, rec := range recs {
		if rec["level"] != "INFO" || want[fmt.Sprint(rec["port"])] != fmt.Sprint(rec["server"], " ", rec["reason"]) {
			t.Errorf("reap record %v", rec)
		}
	}
	// Deletes were made at the revision seen.
	calls := e.nt.log()
	for _, c := range []string{"delete p-gone@1", "delete p-late@1"} {
		if !slices.Contains(calls, c) {
			t.Errorf("no %q in %q", c, calls)
		}
	}
}

// A user's port still bound to a deleted server (its give-back lost) is
// given back after the grace: device, owner and host emptied, profile
// cleared, a new MAC. So is a user's port the user described "corral":
// it is the user's, never deleted. A user's port another server took
// since is left alone, and a deleted server whose ports were found given
// back a grace after its delete is not read again.
func TestReaperGivesUsersPortsBack(t *testing.T) {
	e := newEnv(t)
	e.c.boot(gone, fsm.Network{Port: "u-bound"}, fsm.Network{Port: "u-marked"}, fsm.Network{Port: "u-taken"})
	e.c.boot(live, fsm.Network{Port: "u-taken"})
	e.c.remove(gone, t0.Add(time.Minute))
	e.nt.add("u-bound", "", gone)
	e.nt.add("u-marked", neutron.CreatedByCorral, gone)
	e.nt.add("u-taken", "", live)

	e.pass(t)
	e.clk.advance(grace)
	e.pass(t)
	for _, id := range []string{"u-bound", "u-marked"} {
		p, ok := e.nt.port(id)
		if !ok {
			t.Fatalf("the user's port %s was deleted", id)
		}
		if p.DeviceID != "" || p.DeviceOwner != "" || p.HostID != "" || len(p.Profile) != 0 || p.MACAddress == "52:54:00:aa:00:01" {
			t.Errorf("the user's port %s was not given back: %+v", id, p)
		}
	}
	if p, _ := e.nt.port("u-taken"); p.DeviceID != live || p.RevisionNumber != 1 {
		t.Errorf("a port another server took was touched: %+v", p)
	}
	if got := e.reaped(t, ActionRelease, ReasonDeleted); got != 2 {
		t.Errorf("reaped{release, server_deleted} = %v, want 2", got)
	}
	if recs := e.logs.records(t, "gave back a user's Neutron port"); len(recs) != 2 || recs[0]["server"] != gone {
		t.Errorf("release records %v", recs)
	}

	// Settled: the next passes list, but read none of its ports again.
	e.pass(t)
	before := len(e.nt.log())
	e.pass(t)
	if got := e.nt.log()[before:]; !slices.Equal(got, []string{"list corral"}) {
		t.Errorf("a settled server's ports were read again: %q", got)
	}
}

// The grace counts from the first pass that saw the port orphaned at its
// revision: a port someone changes meanwhile starts again, one changed
// between the pass and the delete is left alone (Neutron's If-Match), and
// a peer that stops leading forgets what it saw.
func TestReaperGraceRestarts(t *testing.T) {
	e := newEnv(t)
	e.c.boot(gone)
	e.c.remove(gone, t0.Add(time.Minute))
	e.nt.add("p", neutron.CreatedByCorral, gone)
	e.pass(t)
	e.clk.advance(grace / 2)
	e.nt.touch("p", func(p *neutron.PortState) { p.Name = "renamed" })
	e.pass(t) // a new revision: armed again
	e.clk.advance(grace / 2)
	e.pass(t)
	if _, ok := e.nt.port("p"); !ok {
		t.Fatal("a port changed within its grace was deleted")
	}

	e.c.leader.Store(false)
	e.pass(t) // not the leader: forgets
	e.c.leader.Store(true)
	e.clk.advance(grace / 2)
	e.pass(t) // a new term: first seen
	e.clk.advance(grace - time.Second)
	e.pass(t)
	if _, ok := e.nt.port("p"); !ok {
		t.Fatal("a new leader deleted a port before its own grace")
	}

	// Changed after the pass read it: the delete at the old revision is
	// refused and the port is looked at afresh.
	e.clk.advance(time.Second)
	e.nt.mu.Lock()
	stale := e.nt.ports["p"].RevisionNumber
	e.nt.mu.Unlock()
	e.r.seen["p"] = sighting{first: e.clk.now().Add(-grace), rev: stale, server: gone, action: ActionDelete}
	changedBetween := &racingNeutron{fakeNeutron: e.nt, before: func() {
		e.nt.touch("p", func(p *neutron.PortState) { p.DeviceID = live })
	}}
	e.r.nt = changedBetween
	e.c.boot(live)
	e.pass(t)
	if p, ok := e.nt.port("p"); !ok || p.DeviceID != live {
		t.Fatalf("a port changed between the pass and its delete was deleted: %+v %v", p, ok)
	}
	if got := e.reaped(t, ActionDelete, ReasonDeleted) + e.reaped(t, ActionDelete, ReasonUnrecorded); got != 0 {
		t.Errorf("reaped = %v, want 0", got)
	}
	if _, armed := e.r.seen["p"]; armed {
		t.Error("a port refused at its revision stays armed")
	}
}

// racingNeutron changes the port right before the reaper's delete.
type racingNeutron struct {
	*fakeNeutron
	before func()
}

func (r *racingNeutron) DeletePortAtRevision(ctx context.Context, id string, rev int) error {
	r.before()
	return r.fakeNeutron.DeletePortAtRevision(ctx, id, rev)
}

// A create intent the leader stamped less than a grace ago keeps the
// server's unrecorded ports untouched even once they were seen orphaned
// for the grace (a leader whose clock is behind the one that stamped it),
// for a deleted server as for a live one (its owner records the port it
// made); a live server's recorded ports and the user's are never touched,
// whatever its intents.
func TestReaperLeavesPortsOfAPendingCreate(t *testing.T) {
	e := newEnv(t)
	now := e.clk.now()
	e.c.boot(pending, fsm.Network{UUID: "net-a"})
	e.c.apply(&fsm.SetPortIntent{Meta: fsm.Meta{At: now.Add(5 * time.Minute)}, ID: pending, Host: "h1", Epoch: 1,
		Step: fsm.PortStepCreate, NetworkID: "net-a"})
	e.c.boot(live, fsm.Network{UUID: "net-a"}, fsm.Network{UUID: "net-b"}, fsm.Network{Port: "p-user"})
	e.c.apply(&fsm.RecordServerPort{ID: live, Host: "h1", Epoch: 1, Port: fsm.ServerPort{ID: "p-live", NetworkID: "net-a"}})
	e.c.apply(&fsm.SetPortIntent{Meta: fsm.Meta{At: now.Add(5 * time.Minute)}, ID: live, Host: "h1", Epoch: 1,
		Step: fsm.PortStepCreate, NetworkID: "net-b"})
	e.c.remove(pending, now.Add(5*time.Minute))
	e.nt.add("p-pending", neutron.CreatedByCorral, pending)
	e.nt.add("p-live", neutron.CreatedByCorral, live)
	e.nt.add("p-making", neutron.CreatedByCorral, live)
	e.nt.add("p-user", neutron.CreatedByCorral, live) // the user's, described as corral's
	for range 3 {
		e.pass(t)
		e.clk.advance(grace / 2)
	}
	for _, id := range []string{"p-pending", "p-making"} {
		if _, ok := e.nt.port(id); !ok {
			t.Fatalf("%s, the port of a create intent younger than the grace, was deleted", id)
		}
	}
	e.clk.advance(grace) // the intents are now a grace old: the ports are armed, then reaped
	e.pass(t)
	e.clk.advance(grace)
	e.pass(t)
	for _, id := range []string{"p-pending", "p-making"} {
		if _, ok := e.nt.port(id); ok {
			t.Errorf("%s, the unrecorded port of an old create intent, outlived its grace", id)
		}
	}
	for _, id := range []string{"p-live", "p-user"} {
		if _, ok := e.nt.port(id); !ok {
			t.Errorf("a live server's port %s was deleted", id)
		}
	}
}

// Only the leader reads Neutron; a failing Neutron is counted and retried.
func TestReaperOnlyOnTheLeaderAndCountsFailures(t *testing.T) {
	e := newEnv(t)
	e.c.boot(gone)
	e.c.remove(gone, t0.Add(time.Minute))
	e.nt.add("p", neutron.CreatedByCorral, gone)
	e.c.leader.Store(false)
	e.pass(t)
	if calls := e.nt.log(); len(calls) != 0 {
		t.Fatalf("a follower called Neutron: %q", calls)
	}
	e.c.leader.Store(true)
	e.nt.fail = fmt.Errorf("%w: down for the test", neutron.ErrUnavailable)
	if err := e.r.Pass(context.Background()); !errors.Is(err, neutron.ErrUnavailable) {
		t.Fatalf("pass with Neutron down = %v", err)
	}
	if got := e.metric(t, "corral_neutron_port_reap_errors_total", nil); got != 1 {
		t.Errorf("corral_neutron_port_reap_errors_total = %v, want 1", got)
	}
	e.nt.fail = nil
	e.pass(t)
	e.clk.advance(grace)
	e.pass(t)
	if _, ok := e.nt.port("p"); ok {
		t.Error("the port outlived its grace once Neutron answered")
	}
}

func TestNewRefusesNegativeDurations(t *testing.T) {
	for _, cfg := range []Config{{Interval: -time.Second}, {Grace: -time.Second}} {
		if _, err := New(newCluster(t), newFakeNeutron(), cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
