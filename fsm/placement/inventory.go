package placement

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Inventory is a provider's stock of one resource class. A zero MinUnit,
// StepSize or AllocationRatio means Placement's default (1, 1, 1.0) and a
// zero MaxUnit means Total; stored inventories always carry the effective
// values.
type Inventory struct {
	Total           int64   `json:"total"`
	Reserved        int64   `json:"reserved"`
	MinUnit         int64   `json:"min_unit"`
	MaxUnit         int64   `json:"max_unit"`
	StepSize        int64   `json:"step_size"`
	AllocationRatio float64 `json:"allocation_ratio"`
}

// Capacity is Placement's int((total - reserved) * allocation_ratio),
// truncated toward zero and clamped to math.MaxInt64.
func (i Inventory) Capacity() int64 {
	f := float64(i.Total-i.Reserved) * i.AllocationRatio
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	return int64(f)
}

// Normalize fills Placement's defaults and validates inv for resource class
// rc on provider uuid (used in messages only).
func (i Inventory) normalize(uuid, rc string) (Inventory, error) {
	if i.MinUnit == 0 {
		i.MinUnit = 1
	}
	if i.StepSize == 0 {
		i.StepSize = 1
	}
	if i.AllocationRatio == 0 {
		i.AllocationRatio = 1
	}
	if i.MaxUnit == 0 {
		i.MaxUnit = i.Total
	}
	bad := func(why string, args ...any) (Inventory, error) {
		return Inventory{}, invalidf("bad inventory %s for resource provider %s: "+why,
			append([]any{rc, uuid}, args...)...)
	}
	switch {
	case i.Total < 1 || i.Total > MaxAmount:
		return bad("total must be from 1 to %d, got %d", MaxAmount, i.Total)
	case i.Reserved < 0 || i.Reserved > i.Total:
		return bad("reserved must be from 0 to total (%d), got %d", i.Total, i.Reserved)
	case i.MinUnit < 1 || i.MinUnit > MaxAmount:
		return bad("min_unit must be from 1 to %d, got %d", MaxAmount, i.MinUnit)
	case i.MaxUnit < i.MinUnit || i.MaxUnit > i.Total:
		return bad("max_unit must be from min_unit (%d) to total (%d), got %d", i.MinUnit, i.Total, i.MaxUnit)
	case i.StepSize < 1 || i.StepSize > MaxAmount:
		return bad("step_size must be from 1 to %d, got %d", MaxAmount, i.StepSize)
	case math.IsNaN(i.AllocationRatio) || i.AllocationRatio <= 0 || i.AllocationRatio > MaxAllocationRatio:
		return bad("allocation_ratio must be greater than 0 and at most %g, got %g", MaxAllocationRatio, i.AllocationRatio)
	}
	return i, nil
}

// validInventories validates and normalises a whole inventory set.
func validInventories(uuid string, in map[string]Inventory) (map[string]Inventory, error) {
	out := make(map[string]Inventory, len(in))
	for _, rc := range sortedKeys(in) {
		if err := ValidateResourceClass(rc); err != nil {
			return nil, err
		}
		inv, err := in[rc].normalize(uuid, rc)
		if err != nil {
			return nil, err
		}
		out[rc] = inv
	}
	return out, nil
}

// checkShrink returns ErrInventoryInUse if replacing the inventory of rc on
// p with inv (nil: removing it) would leave usage above capacity.
func checkShrink(p *provider, rc string, inv *Inventory) error {
	sl := p.slot(rc)
	if sl == nil || sl.used == 0 {
		return nil
	}
	if inv == nil {
		return newErr(ErrInventoryInUse, "",
			"inventory for %s on resource provider %s (%s) is in use: %d allocated by %s; "+
				"remove or move those allocations before removing the inventory",
			rc, p.uuid, p.name, sl.used, consumersOf(p, rc))
	}
	if c := inv.Capacity(); c < sl.used {
		return newErr(ErrInventoryInUse, "",
			"inventory for %s on resource provider %s (%s) is in use: %d allocated, "+
				"but the new inventory would have capacity %d", rc, p.uuid, p.name, sl.used, c)
	}
	return nil
}

// consumersOf describes the consumers holding rc on p, for messages.
func consumersOf(p *provider, rc string) string {
	n := 0
	first := ""
	for _, c := range p.consumers {
		if c.holding(p).amount(rc) > 0 {
			if n == 0 {
				first = c.id
			}
			n++
		}
	}
	if n == 1 {
		return "consumer " + first
	}
	return strconv.Itoa(n) + " consumers (first " + first + ")"
}

// SetInventories replaces all of the provider's inventories; classes not in
// inv are removed. Removing a class in use, or shrinking one below its
// usage, fails with ErrInventoryInUse.
func (s *Store) SetInventories(uuid string, gen uint64, inv map[string]Inventory) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	norm, err := validInventories(p.uuid, inv)
	if err != nil {
		return Provider{}, err
	}
	if err := checkReplace(p, norm); err != nil {
		return Provider{}, err
	}
	s.replaceInventories(p, norm)
	p.gen++
	return p.export(), nil
}

// SetInventoriesAndTraits replaces the provider's inventories (as
// SetInventories) and its traits (as SetTraits) in one step with one
// generation increment: on error, neither changes. It lets a compute host
// or node report everything it knows at once.
func (s *Store) SetInventoriesAndTraits(uuid string, gen uint64, inv map[string]Inventory, traits []string) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	norm, err := validInventories(p.uuid, inv)
	if err != nil {
		return Provider{}, err
	}
	ts, err := validTraits(traits)
	if err != nil {
		return Provider{}, err
	}
	if err := checkReplace(p, norm); err != nil {
		return Provider{}, err
	}
	s.replaceInventories(p, norm)
	s.replaceTraits(p, ts)
	p.gen++
	return p.export(), nil
}

// checkReplace checks that replacing p's inventories with norm removes or
// shrinks nothing in use.
func checkReplace(p *provider, norm map[string]Inventory) error {
	for _, sl := range p.inv {
		var next *Inventory
		if n, ok := norm[sl.rc]; ok {
			next = &n
		}
		if err := checkShrink(p, sl.rc, next); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) replaceInventories(p *provider, norm map[string]Inventory) {
	var drop []string
	for _, sl := range p.inv {
		if _, keep := norm[sl.rc]; !keep {
			drop = append(drop, sl.rc)
		}
	}
	for _, rc := range drop {
		s.dropInventory(p, rc)
	}
	for _, rc := range sortedKeys(norm) {
		s.putInventory(p, rc, norm[rc])
	}
}

// SetInventory creates or replaces the provider's inventory of one class.
func (s *Store) SetInventory(uuid string, gen uint64, rc string, inv Inventory) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	if err := ValidateResourceClass(rc); err != nil {
		return Provider{}, err
	}
	n, err := inv.normalize(p.uuid, rc)
	if err != nil {
		return Provider{}, err
	}
	if err := checkShrink(p, rc, &n); err != nil {
		return Provider{}, err
	}
	s.putInventory(p, rc, n)
	p.gen++
	return p.export(), nil
}

// DeleteInventory removes the provider's inventory of one class; it fails
// with ErrInventoryInUse while allocations hold any of it.
func (s *Store) DeleteInventory(uuid string, gen uint64, rc string) (Provider, error) {
	p, err := s.lookupGen(uuid, gen)
	if err != nil {
		return Provider{}, err
	}
	if p.slot(rc) == nil {
		return Provider{}, newErr(ErrNotFound, "",
			"resource provider %s (%s) has no inventory of class %s", p.uuid, p.name, rc)
	}
	if err := checkShrink(p, rc, nil); err != nil {
		return Provider{}, err
	}
	s.dropInventory(p, rc)
	p.gen++
	return p.export(), nil
}

// putInventory stores a validated inventory, keeping the usage.
func (s *Store) putInventory(p *provider, rc string, inv Inventory) {
	sl := p.slot(rc)
	if sl == nil {
		i, _ := slices.BinarySearchFunc(p.inv, rc, func(x slot, rc string) int { return strings.Compare(x.rc, rc) })
		if p.inv == nil {
			p.inv = p.inv1[:0:1]
		}
		p.inv = slices.Insert(p.inv, i, slot{rc: s.byRC.add(rc, p.idx)})
		sl = &p.inv[i]
	}
	sl.inv = inv
	sl.cap = inv.Capacity()
	s.refreshFree(p, rc)
}

func (s *Store) dropInventory(p *provider, rc string) {
	p.inv = slices.DeleteFunc(p.inv, func(x slot) bool { return x.rc == rc })
	if len(p.inv) == 0 {
		p.inv, p.inv1[0] = nil, slot{}
	}
	s.byRC.del(rc, p.idx)
	s.byFree.del(rc, p.idx)
}

// Usages returns the provider's usage of every class it has inventory of
// (0 for unused classes).
func (s *Store) Usages(uuid string) (map[string]int64, error) {
	p, err := s.lookup(uuid)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(p.inv))
	for _, sl := range p.inv {
		out[sl.rc] = sl.used
	}
	return out, nil
}

// ProjectUsages returns the project's total usage per class (classes it
// uses only).
func (s *Store) ProjectUsages(project string) map[string]int64 {
	out := make(map[string]int64)
	for rc, n := range s.projects[project] {
		out[rc] = n
	}
	return out
}
