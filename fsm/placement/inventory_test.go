package placement

import (
	"math"
	"testing"
)

func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		inv  Inventory
		want int64
	}{
		{Inventory{Total: 8, Reserved: 2, AllocationRatio: 16}, 96},
		{Inventory{Total: 8, AllocationRatio: 1}, 8},
		{Inventory{Total: 1, Reserved: 1, AllocationRatio: 1}, 0},
		{Inventory{Total: 3, AllocationRatio: 1.5}, 4}, // 4.5 truncated
		{Inventory{Total: 7, AllocationRatio: 0.9}, 6}, // 6.3 truncated
		{Inventory{Total: 16384, Reserved: 512, AllocationRatio: 1.5}, 23808},
		{Inventory{Total: MaxAmount, AllocationRatio: MaxAllocationRatio}, math.MaxInt64},
	} {
		if got := tc.inv.Capacity(); got != tc.want {
			t.Errorf("capacity of %+v = %d, want %d", tc.inv, got, tc.want)
		}
	}
}

func TestInventoryValidation(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", nil)
	for _, tc := range []struct {
		inv  Inventory
		word string
	}{
		{Inventory{Total: 0}, "total"},
		{Inventory{Total: -1}, "total"},
		{Inventory{Total: MaxAmount + 1}, "total"},
		{Inventory{Total: 4, Reserved: -1}, "reserved"},
		{Inventory{Total: 4, Reserved: 5}, "reserved"},
		{Inventory{Total: 4, MinUnit: -1}, "min_unit"},
		{Inventory{Total: 4, MinUnit: 3, MaxUnit: 2}, "max_unit"},
		{Inventory{Total: 4, MaxUnit: 5}, "max_unit"},
		{Inventory{Total: 4, StepSize: -2}, "step_size"},
		{Inventory{Total: 4, AllocationRatio: -1}, "allocation_ratio"},
		{Inventory{Total: 4, AllocationRatio: math.NaN()}, "allocation_ratio"},
		{Inventory{Total: 4, AllocationRatio: math.Inf(1)}, "allocation_ratio"},
	} {
		_, err := s.SetInventory(rp(1), 0, "VCPU", tc.inv)
		wantErr(t, err, ErrInvalid, tc.word, "VCPU", rp(1))
	}
	_, err := s.SetInventory(rp(1), 0, "GOLD", Inventory{Total: 1})
	wantErr(t, err, ErrInvalid, "GOLD")
	// reserved == total is allowed (capacity 0), as in Placement 1.26+.
	p, err := s.SetInventory(rp(1), 0, "VCPU", Inventory{Total: 4, Reserved: 4})
	if err != nil || p.Generation != 1 {
		t.Fatalf("reserved == total: %v", err)
	}
	want := Inventory{Total: 4, Reserved: 4, MinUnit: 1, MaxUnit: 4, StepSize: 1, AllocationRatio: 1}
	if p.Inventories["VCPU"] != want {
		t.Fatalf("defaults: %+v", p.Inventories["VCPU"])
	}
}

func TestInventoryInUse(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", map[string]Inventory{
		"VCPU":      {Total: 8, Reserved: 2, AllocationRatio: 16},
		"MEMORY_MB": {Total: 4096},
		"DISK_GB":   {Total: 100},
	})
	// max_unit defaults to total (8), so 50 VCPU takes 7 consumers.
	err := s.SetAllocations(cid(1), alloc("proj", nil, map[string]map[string]int64{rp(1): {"VCPU": 2, "MEMORY_MB": 1024}}))
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 7; i++ {
		if err := s.SetAllocations(cid(i), alloc("proj", nil, map[string]map[string]int64{rp(1): {"VCPU": 8}})); err != nil {
			t.Fatal(err)
		}
	}
	g := gen(t, s, rp(1))
	// Deleting inventory in use is a 409 with placement.inventory.inuse.
	_, err = s.DeleteInventory(rp(1), g, "MEMORY_MB")
	wantErr(t, err, ErrInventoryInUse, "MEMORY_MB", "1024", "consumer "+cid(1))
	_, err = s.DeleteInventory(rp(1), g, "VCPU")
	wantErr(t, err, ErrInventoryInUse, "VCPU", "50", "7 consumers (first "+cid(1))
	if ErrorCode(err) != CodeInventoryInUse || HTTPStatus(err) != 409 {
		t.Fatalf("code %s status %d", ErrorCode(err), HTTPStatus(err))
	}
	// Shrinking below usage: capacity (4-0)*12 = 48 < 50.
	_, err = s.SetInventory(rp(1), g, "VCPU", Inventory{Total: 4, AllocationRatio: 12})
	wantErr(t, err, ErrInventoryInUse, "capacity 48")
	// Shrinking but staying above usage is fine: 4*13 = 52.
	p, err := s.SetInventory(rp(1), g, "VCPU", Inventory{Total: 4, AllocationRatio: 13})
	if err != nil {
		t.Fatal(err)
	}
	g = p.Generation
	// Replacing all inventories must keep the used classes.
	_, err = s.SetInventories(rp(1), g, map[string]Inventory{"VCPU": {Total: 8}, "DISK_GB": {Total: 10}})
	wantErr(t, err, ErrInventoryInUse, "MEMORY_MB")
	_, err = s.SetInventories(rp(1), g, map[string]Inventory{"VCPU": {Total: 4, AllocationRatio: 16}, "MEMORY_MB": {Total: 1024}})
	if err != nil {
		t.Fatalf("dropping the unused DISK_GB: %v", err)
	}
	g++
	_, err = s.DeleteInventory(rp(1), g, "DISK_GB")
	wantErr(t, err, ErrNotFound, "DISK_GB")
	_, err = s.SetInventories(rp(1), g-1, nil)
	wantErr(t, err, ErrConcurrentUpdate)
	u, err := s.Usages(rp(1))
	if err != nil || u["VCPU"] != 50 || u["MEMORY_MB"] != 1024 || len(u) != 2 {
		t.Fatalf("usages %v %v", u, err)
	}
	// Free everything, then inventory can go.
	for i := 1; i <= 7; i++ {
		if err := s.SetAllocations(cid(i), alloc("", Gen(0), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetInventories(rp(1), gen(t, s, rp(1)), nil); err != nil {
		t.Fatal(err)
	}
	u, _ = s.Usages(rp(1))
	if len(u) != 0 {
		t.Fatalf("usages after clearing %v", u)
	}
	checkInvariants(t, s)
}

func TestSetInventoriesAndTraits(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(8, 8192, 80), "CUSTOM_OLD")
	if err := s.SetAllocations(cid(1), alloc("p", nil, map[string]map[string]int64{rp(1): {"VCPU": 2}})); err != nil {
		t.Fatal(err)
	}
	g := gen(t, s, rp(1))
	before := encode(t, s)
	// A bad trait or an in-use removal changes neither half.
	_, err := s.SetInventoriesAndTraits(rp(1), g, map[string]Inventory{"VCPU": {Total: 8}}, []string{"bad"})
	wantErr(t, err, ErrInvalid)
	_, err = s.SetInventoriesAndTraits(rp(1), g, map[string]Inventory{"DISK_GB": {Total: 8}}, []string{"CUSTOM_NEW"})
	wantErr(t, err, ErrInventoryInUse, "VCPU")
	_, err = s.SetInventoriesAndTraits(rp(1), g+1, nil, nil)
	wantErr(t, err, ErrConcurrentUpdate)
	if string(encode(t, s)) != string(before) {
		t.Fatal("a failed update changed the store")
	}
	p, err := s.SetInventoriesAndTraits(rp(1), g, map[string]Inventory{"VCPU": {Total: 4}}, []string{"CUSTOM_NEW"})
	if err != nil || p.Generation != g+1 || len(p.Inventories) != 1 || p.Traits[0] != "CUSTOM_NEW" {
		t.Fatalf("update: %+v %v", p, err)
	}
	checkInvariants(t, s)
}
