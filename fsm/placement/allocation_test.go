package placement

import (
	"testing"
)

type allocs = map[string]map[string]int64

func TestAllocationConstraints(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", map[string]Inventory{
		"VCPU":      {Total: 8, Reserved: 2, AllocationRatio: 16, MaxUnit: 8},
		"MEMORY_MB": {Total: 8192, MinUnit: 512, StepSize: 256},
	})
	for _, tc := range []struct {
		res   map[string]int64
		words []string
	}{
		{map[string]int64{"VCPU": 9}, []string{"max_unit 8"}},
		{map[string]int64{"MEMORY_MB": 256}, []string{"min_unit 512"}},
		{map[string]int64{"MEMORY_MB": 1000}, []string{"step_size 256"}},
		{map[string]int64{"DISK_GB": 1}, []string{"no inventory of DISK_GB"}},
	} {
		err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(1): tc.res}))
		wantErr(t, err, ErrNotEnough, append(tc.words, rp(1), cid(1))...)
		if HTTPStatus(err) != 409 {
			t.Fatalf("status %d", HTTPStatus(err))
		}
	}
	for _, bad := range []ConsumerAllocations{
		alloc("p", nil, allocs{rp(1): {"VCPU": 0}}),
		alloc("p", nil, allocs{rp(1): {}}),
		alloc("p", nil, allocs{rp(1): {"vcpu": 1}}),
		alloc("p", nil, allocs{rp(9): {"VCPU": 1}}),
		alloc("p", nil, allocs{"bad": {"VCPU": 1}}),
		alloc("", nil, allocs{rp(1): {"VCPU": 1}}),
	} {
		wantErr(t, s.SetAllocations(cid(1), bad), ErrInvalid)
	}
	wantErr(t, s.SetAllocations("not-a-uuid", alloc("p", nil, allocs{rp(1): {"VCPU": 1}})), ErrInvalid)
	// Capacity (8-2)*16 = 96: 12 consumers of 8 fit, the 13th does not.
	for i := 0; i < 12; i++ {
		if err := s.SetAllocations(cid(i), alloc("p", nil, allocs{rp(1): {"VCPU": 8}})); err != nil {
			t.Fatalf("consumer %d: %v", i, err)
		}
	}
	err := s.SetAllocations(cid(12), alloc("p", nil, allocs{rp(1): {"VCPU": 1}}))
	wantErr(t, err, ErrNotEnough, "not enough VCPU", rp(1), "rp-1", "requested 1", "96 used", "capacity 96")
	if u := s.ProjectUsages("p"); u["VCPU"] != 96 || len(u) != 1 {
		t.Fatalf("project usages %v", u)
	}
	checkInvariants(t, s)
}

func TestConsumerGenerations(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(4, 4096, 100))
	one := allocs{rp(1): {"VCPU": 1}}
	err := s.SetAllocations(cid(1), alloc("p", Gen(0), one))
	wantErr(t, err, ErrConcurrentUpdate, "no allocations", cid(1))
	if ErrorCode(err) != CodeConcurrentUpdate {
		t.Fatalf("code %s", ErrorCode(err))
	}
	if err := s.SetAllocations(cid(1), alloc("p", nil, one)); err != nil {
		t.Fatal(err)
	}
	a, ok := s.Allocations(cid(1))
	if !ok || *a.ConsumerGeneration != 0 || a.Allocations[rp(1)]["VCPU"] != 1 || a.ProjectID != "p" {
		t.Fatalf("allocations = %+v", a)
	}
	wantErr(t, s.SetAllocations(cid(1), alloc("p", nil, one)), ErrConcurrentUpdate, "generation 0")
	wantErr(t, s.SetAllocations(cid(1), alloc("p", Gen(3), one)), ErrConcurrentUpdate, "generation is 0", "expected 3")
	if err := s.SetAllocations(cid(1), alloc("p", Gen(0), allocs{rp(1): {"VCPU": 2}})); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.Allocations(cid(1)); *a.ConsumerGeneration != 1 {
		t.Fatalf("generation after second write = %d", *a.ConsumerGeneration)
	}
	// An empty write deletes the consumer; it is new again afterwards.
	if err := s.SetAllocations(cid(1), alloc("p", Gen(1), nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Allocations(cid(1)); ok || len(s.Consumers()) != 0 {
		t.Fatal("consumer survived an empty write")
	}
	if err := s.SetAllocations(cid(1), alloc("p", nil, one)); err != nil {
		t.Fatal(err)
	}
	// Deleting allocations of an unknown consumer with a null generation is a no-op.
	if err := s.SetAllocations(cid(2), alloc("", nil, nil)); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
}

func TestReplaceFreesOldAllocations(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(4, 4096, 100))
	mustCreate(t, s, 2, "", vmInv(4, 4096, 100))
	if err := s.SetAllocations(cid(1), alloc("p1", nil, allocs{rp(1): {"VCPU": 4, "MEMORY_MB": 4096}})); err != nil {
		t.Fatal(err)
	}
	g1 := gen(t, s, rp(1))
	if g1 != 1 {
		t.Fatalf("allocation did not bump provider generation: %d", g1)
	}
	// Re-writing a full claim fits: the consumer's own allocation is excluded.
	if err := s.SetAllocations(cid(1), alloc("p1", Gen(0), allocs{rp(1): {"VCPU": 4, "MEMORY_MB": 4096}})); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.SetAllocations(cid(2), alloc("p2", nil, allocs{rp(1): {"VCPU": 1}})), ErrNotEnough)
	// Move the consumer to rp(2) and into project p2: rp(1) is free again.
	if err := s.SetAllocations(cid(1), alloc("p2", Gen(1), allocs{rp(2): {"VCPU": 4}})); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.Usages(rp(1)); u["VCPU"] != 0 || u["MEMORY_MB"] != 0 {
		t.Fatalf("old provider still used: %v", u)
	}
	if gen(t, s, rp(1)) != g1+2 || gen(t, s, rp(2)) != 1 {
		t.Fatalf("generations %d %d", gen(t, s, rp(1)), gen(t, s, rp(2)))
	}
	if len(s.ProjectUsages("p1")) != 0 || s.ProjectUsages("p2")["VCPU"] != 4 {
		t.Fatalf("project usages p1 %v p2 %v", s.ProjectUsages("p1"), s.ProjectUsages("p2"))
	}
	if err := s.SetAllocations(cid(2), alloc("p2", nil, allocs{rp(1): {"VCPU": 4}})); err != nil {
		t.Fatal(err)
	}
	pa, err := s.ProviderAllocations(rp(1))
	if err != nil || len(pa) != 1 || pa[cid(2)]["VCPU"] != 4 {
		t.Fatalf("provider allocations %v %v", pa, err)
	}
	checkInvariants(t, s)
}

func TestMultiAllocationsAtomic(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", map[string]Inventory{"CUSTOM_GOLD": {Total: 1}})
	mustCreate(t, s, 2, "", map[string]Inventory{"CUSTOM_GOLD": {Total: 1}})
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(1): {"CUSTOM_GOLD": 1}})); err != nil {
		t.Fatal(err)
	}
	before := encode(t, s)
	// cid(2) fits on rp(2), cid(3) does not fit on rp(1): nothing is written.
	err := s.SetAllocationsMulti(map[string]ConsumerAllocations{
		cid(2): alloc("p", nil, allocs{rp(2): {"CUSTOM_GOLD": 1}}),
		cid(3): alloc("p", nil, allocs{rp(1): {"CUSTOM_GOLD": 1}}),
	})
	wantErr(t, err, ErrNotEnough, cid(3), rp(1))
	if string(encode(t, s)) != string(before) {
		t.Fatal("failed multi write changed the store")
	}
	// A generation conflict on one consumer also aborts everything.
	err = s.SetAllocationsMulti(map[string]ConsumerAllocations{
		cid(1): alloc("p", Gen(7), nil),
		cid(2): alloc("p", nil, allocs{rp(2): {"CUSTOM_GOLD": 1}}),
	})
	wantErr(t, err, ErrConcurrentUpdate, cid(1))
	if string(encode(t, s)) != string(before) {
		t.Fatal("failed multi write changed the store")
	}
	// Moving cid(1) off rp(1) while cid(2) takes it, in one request, fits.
	err = s.SetAllocationsMulti(map[string]ConsumerAllocations{
		cid(1): alloc("p", Gen(0), allocs{rp(2): {"CUSTOM_GOLD": 1}}),
		cid(2): alloc("q", nil, allocs{rp(1): {"CUSTOM_GOLD": 1}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Both providers changed once each in that request.
	if gen(t, s, rp(1)) != 2 || gen(t, s, rp(2)) != 1 {
		t.Fatalf("generations %d %d", gen(t, s, rp(1)), gen(t, s, rp(2)))
	}
	// Two keys for the same consumer are rejected.
	err = s.SetAllocationsMulti(map[string]ConsumerAllocations{
		cid(5):                             alloc("p", nil, nil),
		"00000001000040008000000000000005": alloc("p", nil, nil),
	})
	wantErr(t, err, ErrInvalid, "more than once")
	checkInvariants(t, s)
}
