package fsm

import (
	"errors"
	"reflect"
	"testing"
)

func ownedFixture(t *testing.T, n int) *applier {
	a := serverFixture(t)
	a.ok(&RegisterHost{Meta: at(0), Name: "h3", Kind: KindIronic})
	for i := 0; i < n; i++ {
		host := []string{"h1", "h2", "h3"}[i%3]
		a.ok(&CreateServer{Meta: at(1), ID: string(rune('a'+i)) + "-srv", Name: "s", FlavorID: "gold", ImageRef: "i", Host: host})
	}
	return a
}

func TestReassignPlanSameOnEveryReplica(t *testing.T) {
	a := ownedFixture(t, 12)
	b := New()
	if err := b.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	pa, pb := a.s.PlanReassign("h1"), b.PlanReassign("h1")
	if !reflect.DeepEqual(pa, pb) || len(pa) != 4 {
		t.Fatalf("plans differ or wrong size:\n%v\n%v", pa, pb)
	}
	for _, m := range pa {
		if m.ToHost == "h1" || m.FromHost != "h1" || m.FromEpoch != 1 {
			t.Fatalf("bad move %+v", m)
		}
	}
}

func TestReassignServersBumpsEpochsAndFences(t *testing.T) {
	a := ownedFixture(t, 6)
	a.ok(&SetHostStatus{Meta: at(2), Name: "h1", Status: HostDown})
	c := &ReassignServers{Meta: at(3), From: "h1", Reason: ReasonHostDown}
	a.s.Prepare(c)
	if len(c.Moves) != 2 {
		t.Fatalf("moves %+v", c.Moves)
	}
	a.ok(c)
	planIndex := a.index
	for _, m := range c.Moves {
		s, _ := a.s.Server(m.ServerID)
		if s.Host != m.ToHost || s.Epoch != 2 || s.EpochIndex != planIndex || s.OwnerReason == "" {
			t.Fatalf("server after move: %+v", s)
		}
		// The old owner is fenced out.
		if r := a.apply(&SetServerTask{Meta: at(4), ID: s.ID, Host: "h1", Epoch: 1}); !errors.Is(r.Err, ErrFenced) {
			t.Fatalf("old owner not fenced: %v", r.Err)
		}
	}
	// Re-applying the same plan is rejected whole: nothing moves twice.
	before := a.s.Digest()
	if r := a.apply(c); r.Err == nil {
		t.Fatal("a stale plan was applied twice")
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected plan changed the state")
	}
	if got := a.s.PlanReassign("h1"); len(got) != 0 {
		t.Fatalf("h1 still has servers to move: %v", got)
	}
}

func TestDrainedHostGetsNoServers(t *testing.T) {
	a := ownedFixture(t, 0)
	a.ok(&SetHostDrain{Meta: at(1), Name: "h1", Drained: true})
	for i := 0; i < 6; i++ {
		c := &CreateServer{Meta: at(2), ID: string(rune('a' + i)), Name: "s", FlavorID: "gold", ImageRef: "i"}
		a.s.Prepare(c)
		if c.Host == "h1" {
			t.Fatal("a drained host got a new server")
		}
		a.ok(c)
	}
	if r := a.apply(&CreateServer{Meta: at(3), ID: "z", Name: "s", FlavorID: "gold", ImageRef: "i", Host: "h1"}); !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("placing on a drained host: %v", r.Err)
	}
	if r := a.apply(&ReassignServers{Meta: at(4), Reason: ReasonAdminMove,
		Moves: []Move{{ServerID: "a", FromHost: "h2", FromEpoch: 1, ToHost: "h1"}}}); r.Err == nil {
		t.Fatal("moved a server onto a drained host")
	}
}
