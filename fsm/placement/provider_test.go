package placement

import (
	"strings"
	"testing"
)

func TestCreateProvider(t *testing.T) {
	s := New()
	p := mustCreate(t, s, 1, "", nil)
	if p.Generation != 0 || p.RootUUID != rp(1) || p.ParentUUID != "" {
		t.Fatalf("new provider = %+v", p)
	}
	// UUIDs are canonicalised.
	up, err := s.CreateProvider(Provider{UUID: strings.ToUpper(strings.ReplaceAll(rp(2), "-", "")), Name: "two"})
	if err != nil || up.UUID != rp(2) {
		t.Fatalf("create with upper-case UUID: %+v, %v", up, err)
	}
	if _, err := s.Provider(strings.ToUpper(rp(2))); err != nil {
		t.Fatalf("lookup by upper-case UUID: %v", err)
	}
	_, err = s.CreateProvider(Provider{UUID: rp(1), Name: "other"})
	wantErr(t, err, ErrDuplicate, rp(1))
	_, err = s.CreateProvider(Provider{UUID: rp(3), Name: "rp-1"})
	wantErr(t, err, ErrDuplicate, "rp-1")
	if ErrorCode(err) != CodeDuplicateName || HTTPStatus(err) != 409 {
		t.Fatalf("duplicate name code %s status %d", ErrorCode(err), HTTPStatus(err))
	}
	for _, bad := range []Provider{
		{UUID: "not-a-uuid", Name: "x"},
		{UUID: rp(4), Name: ""},
		{UUID: rp(4), Name: strings.Repeat("n", MaxNameLen+1)},
		{UUID: rp(4), Name: "tab\there"},
		{UUID: rp(4), Name: "x", Traits: []string{"lower"}},
		{UUID: rp(4), Name: "x", Aggregates: []string{"nope"}},
		{UUID: rp(4), Name: "x", Inventories: map[string]Inventory{"GOLD": {Total: 1}}},
		{UUID: rp(4), Name: "x", Inventories: map[string]Inventory{"VCPU": {Total: 0}}},
	} {
		_, err := s.CreateProvider(bad)
		wantErr(t, err, ErrInvalid)
		if HTTPStatus(err) != 400 {
			t.Fatalf("status %d for %v", HTTPStatus(err), err)
		}
	}
	if s.Len() != 2 {
		t.Fatalf("failed creates left providers behind: %d", s.Len())
	}
	if _, err := s.ProviderByName("rp-1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.ProviderByName("missing")
	wantErr(t, err, ErrNotFound, "missing")
	_, err = s.Provider(rp(9))
	wantErr(t, err, ErrNotFound, rp(9))
	checkInvariants(t, s)
}

func TestCreateProviderWhole(t *testing.T) {
	s := New()
	p, err := s.CreateProvider(Provider{UUID: rp(1), Name: "node-1",
		Traits:      []string{"CUSTOM_RAID", "HW_CPU_X86_AVX2", "CUSTOM_RAID"},
		Aggregates:  []string{strings.ToUpper(agg(2)), agg(1)},
		Inventories: map[string]Inventory{"CUSTOM_GOLD": {Total: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 0 || len(p.Traits) != 2 || p.Traits[0] != "CUSTOM_RAID" ||
		p.Aggregates[0] != agg(1) || p.Aggregates[1] != agg(2) {
		t.Fatalf("provider = %+v", p)
	}
	want := Inventory{Total: 1, MinUnit: 1, MaxUnit: 1, StepSize: 1, AllocationRatio: 1}
	if p.Inventories["CUSTOM_GOLD"] != want {
		t.Fatalf("inventory = %+v, want %+v", p.Inventories["CUSTOM_GOLD"], want)
	}
	checkInvariants(t, s)
}

func TestParentChild(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", nil)
	_, err := s.CreateProvider(Provider{UUID: rp(2), Name: "orphan", ParentUUID: rp(99)})
	wantErr(t, err, ErrInvalid, "parent", rp(99))
	c := mustCreate(t, s, 2, rp(1), nil)
	g := mustCreate(t, s, 3, rp(2), nil)
	if c.RootUUID != rp(1) || g.RootUUID != rp(1) || g.ParentUUID != rp(2) {
		t.Fatalf("tree: child %+v grandchild %+v", c, g)
	}
	// A provider cannot become its own ancestor.
	_, err = s.UpdateProvider(rp(1), 0, "rp-1", rp(3))
	wantErr(t, err, ErrInvalid, "loop")
	_, err = s.UpdateProvider(rp(1), 0, "rp-1", rp(1))
	wantErr(t, err, ErrInvalid, "loop")
	// Deleting a parent fails while it has children.
	err = s.DeleteProvider(rp(1), 0)
	wantErr(t, err, ErrInUse, "parent", rp(2))
	if ErrorCode(err) != CodeCannotDelParent {
		t.Fatalf("code %s", ErrorCode(err))
	}
	// Re-parent the grandchild to be a root, then rename it.
	g2, err := s.UpdateProvider(rp(3), 0, "renamed", "")
	if err != nil || g2.RootUUID != rp(3) || g2.Generation != 1 || g2.Name != "renamed" {
		t.Fatalf("re-parent: %+v %v", g2, err)
	}
	_, err = s.UpdateProvider(rp(3), 1, "rp-1", "")
	wantErr(t, err, ErrDuplicate, "rp-1")
	_, err = s.UpdateProvider(rp(3), 0, "x", "")
	wantErr(t, err, ErrConcurrentUpdate, "generation is 1", "expected 0")
	if err := s.DeleteProvider(rp(2), 0); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteProvider(rp(1), 5)
	wantErr(t, err, ErrConcurrentUpdate)
	if ErrorCode(err) != CodeConcurrentUpdate {
		t.Fatalf("code %s", ErrorCode(err))
	}
	if err := s.DeleteProvider(rp(1), 0); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.DeleteProvider(rp(1), 0), ErrNotFound)
	if _, err := s.ProviderByName("rp-1"); err == nil {
		t.Fatal("deleted provider's name still resolves")
	}
	checkInvariants(t, s)
}

func TestTraitsAggregatesGenerations(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", nil)
	p, err := s.SetTraits(rp(1), 0, []string{"HW_CPU_X86_AVX2", "CUSTOM_A"})
	if err != nil || p.Generation != 1 {
		t.Fatalf("set traits: %+v %v", p, err)
	}
	_, err = s.SetTraits(rp(1), 0, nil)
	wantErr(t, err, ErrConcurrentUpdate)
	_, err = s.SetTraits(rp(1), 1, []string{"CUSTOM_"})
	wantErr(t, err, ErrInvalid, "CUSTOM_")
	p, err = s.SetAggregates(rp(1), 1, []string{agg(1)})
	if err != nil || p.Generation != 2 || p.Aggregates[0] != agg(1) {
		t.Fatalf("set aggregates: %+v %v", p, err)
	}
	_, err = s.SetAggregates(rp(1), 2, []string{"x"})
	wantErr(t, err, ErrInvalid)
	p, err = s.SetTraits(rp(1), 2, nil)
	if err != nil || p.Traits != nil || p.Generation != 3 {
		t.Fatalf("clear traits: %+v %v", p, err)
	}
	_, err = s.SetTraits(rp(7), 0, nil)
	wantErr(t, err, ErrNotFound)
	checkInvariants(t, s)
}

func TestDeleteProviderWithAllocations(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(8, 4096, 100))
	if err := s.SetAllocations(cid(1), alloc("p", nil, map[string]map[string]int64{rp(1): {"VCPU": 1}})); err != nil {
		t.Fatal(err)
	}
	g := gen(t, s, rp(1))
	err := s.DeleteProvider(rp(1), g)
	wantErr(t, err, ErrInUse, cid(1))
	if ErrorCode(err) != CodeProviderInUse {
		t.Fatalf("code %s", ErrorCode(err))
	}
	if err := s.SetAllocations(cid(1), alloc("p", Gen(0), nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProvider(rp(1), gen(t, s, rp(1))); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
}
