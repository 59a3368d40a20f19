package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm/sched"
)

func candidateUUIDs(t testing.TB, s *Store, q CandidateQuery) []string {
	t.Helper()
	cs, err := s.Candidates(q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if len(c.Allocations) != 1 || len(c.Summaries) != 1 {
			t.Fatalf("candidate %+v is not single-provider", c)
		}
		out = append(out, c.Summaries[0].UUID)
	}
	return out
}

func same(t testing.TB, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

var (
	vmFlavor = map[string]int64{"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}
	bmFlavor = map[string]int64{"CUSTOM_GOLD": 1}
	gold     = map[string]Inventory{"CUSTOM_GOLD": {Total: 1}}
)

func TestVMAndBareMetalSideBySide(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(16, 65536, 1000)) // hypervisor
	mustCreate(t, s, 2, "", gold)                   // Ironic node
	mustCreate(t, s, 3, "", gold)                   // Ironic node
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: vmFlavor}), rp(1))
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor}), rp(2), rp(3))

	// A whole node is taken by one bare-metal instance.
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(2): bmFlavor})); err != nil {
		t.Fatal(err)
	}
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor}), rp(3))
	err := s.SetAllocations(cid(2), alloc("p", nil, allocs{rp(2): bmFlavor}))
	wantErr(t, err, ErrNotEnough, "CUSTOM_GOLD", "capacity 1")
	err = s.SetAllocations(cid(2), alloc("p", nil, allocs{rp(3): vmFlavor}))
	wantErr(t, err, ErrNotEnough, "no inventory of")
	checkInvariants(t, s)
}

// A node that also reports standard classes (the legacy behaviour) is a
// candidate for VMs; the flavor migration rewrites the instance's
// allocations to the custom class so the standard inventory can go.
func TestLegacyStandardInventoryHazard(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(16, 65536, 1000))
	legacy := vmInv(64, 131072, 371)
	legacy["CUSTOM_GOLD"] = Inventory{Total: 1}
	mustCreate(t, s, 2, "", legacy)
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: vmFlavor}), rp(1), rp(2))
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor}), rp(2))

	// An old instance holds both the custom and the standard classes.
	old := map[string]int64{"CUSTOM_GOLD": 1, "VCPU": 64, "MEMORY_MB": 131072, "DISK_GB": 371}
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(2): old})); err != nil {
		t.Fatal(err)
	}
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: vmFlavor}), rp(1))
	// Removing the standard inventory fails while the instance holds it.
	g := gen(t, s, rp(2))
	_, err := s.SetInventories(rp(2), g, gold)
	wantErr(t, err, ErrInventoryInUse, cid(1))
	// The migration: the instance now requests the custom class only.
	if err := s.SetAllocations(cid(1), alloc("p", Gen(0), allocs{rp(2): bmFlavor})); err != nil {
		t.Fatal(err)
	}
	// The hazard: with the standard inventory free, a VM could land on the node.
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: vmFlavor}), rp(1), rp(2))
	if _, err := s.SetInventories(rp(2), gen(t, s, rp(2)), gold); err != nil {
		t.Fatal(err)
	}
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: vmFlavor}), rp(1))
	checkInvariants(t, s)
}

func TestCandidateFilters(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", gold, "CUSTOM_RAID", "HW_CPU_X86_AVX2")
	mustCreate(t, s, 2, "", gold, "HW_CPU_X86_AVX2")
	mustCreate(t, s, 3, "", gold, "CUSTOM_RAID", "CUSTOM_MAINT")
	mustCreate(t, s, 4, "", vmInv(8, 8192, 80), "CUSTOM_RAID")
	mustCreate(t, s, 5, rp(4), gold, "CUSTOM_RAID") // a child can satisfy a request alone
	q := func(required ...string) CandidateQuery {
		return CandidateQuery{Resources: bmFlavor, Required: required}
	}
	same(t, candidateUUIDs(t, s, q()), rp(1), rp(2), rp(3), rp(5))
	same(t, candidateUUIDs(t, s, q("CUSTOM_RAID")), rp(1), rp(3), rp(5))
	same(t, candidateUUIDs(t, s, q("CUSTOM_RAID", "HW_CPU_X86_AVX2")), rp(1))
	same(t, candidateUUIDs(t, s, q("CUSTOM_RAID", "!CUSTOM_MAINT")), rp(1), rp(5))
	same(t, candidateUUIDs(t, s, q("!HW_CPU_X86_AVX2")), rp(3), rp(5))
	same(t, candidateUUIDs(t, s, q("CUSTOM_UNKNOWN")))

	for i, aggs := range [][]string{{agg(1)}, {agg(1), agg(2)}, {agg(2)}, nil, {agg(1)}} {
		if _, err := s.SetAggregates(rp(i+1), gen(t, s, rp(i+1)), aggs); err != nil {
			t.Fatal(err)
		}
	}
	mo := func(groups ...[]string) CandidateQuery { return CandidateQuery{Resources: bmFlavor, MemberOf: groups} }
	same(t, candidateUUIDs(t, s, mo([]string{agg(1)})), rp(1), rp(2), rp(5))
	same(t, candidateUUIDs(t, s, mo([]string{agg(1), agg(2)})), rp(1), rp(2), rp(3), rp(5))
	same(t, candidateUUIDs(t, s, mo([]string{agg(1)}, []string{agg(2)})), rp(2))
	same(t, candidateUUIDs(t, s, mo([]string{agg(9)})))

	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, InTree: rp(4)}), rp(5))
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, InTree: rp(5)}), rp(5))
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, InTree: rp(9)}))
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Limit: 2}), rp(1), rp(2))

	cs, err := s.Candidates(CandidateQuery{Resources: map[string]int64{"VCPU": 2}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("candidates %v %v", cs, err)
	}
	sum := cs[0].Summaries[0]
	if cs[0].Allocations[rp(4)]["VCPU"] != 2 || sum.Resources["VCPU"] != (ResourceSummary{Capacity: 8}) ||
		sum.Resources["DISK_GB"].Capacity != 80 || sum.Traits[0] != "CUSTOM_RAID" || sum.Name != "rp-4" {
		t.Fatalf("candidate %+v", cs[0])
	}

	for _, bad := range []CandidateQuery{
		{},
		{Resources: map[string]int64{"VCPU": 0}},
		{Resources: map[string]int64{"GOLD": 1}},
		{Resources: bmFlavor, Required: []string{"bad"}},
		{Resources: bmFlavor, Required: []string{"CUSTOM_A", "!CUSTOM_A"}},
		{Resources: bmFlavor, MemberOf: [][]string{{}}},
		{Resources: bmFlavor, MemberOf: [][]string{{"x"}}},
		{Resources: bmFlavor, InTree: "x"},
		{Resources: bmFlavor, Limit: -1},
	} {
		_, err := s.Candidates(bad)
		wantErr(t, err, ErrInvalid)
	}
}

func TestCandidatesRespectUsageAndConstraints(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", map[string]Inventory{"MEMORY_MB": {Total: 4096, MinUnit: 512, StepSize: 512}})
	mustCreate(t, s, 2, "", map[string]Inventory{"MEMORY_MB": {Total: 2048}})
	mem := func(n int64) CandidateQuery { return CandidateQuery{Resources: map[string]int64{"MEMORY_MB": n}} }
	same(t, candidateUUIDs(t, s, mem(1024)), rp(1), rp(2))
	same(t, candidateUUIDs(t, s, mem(256)), rp(2))  // below min_unit on rp(1)
	same(t, candidateUUIDs(t, s, mem(1000)), rp(2)) // not a multiple of step_size
	same(t, candidateUUIDs(t, s, mem(4096)), rp(1)) // above max_unit (total) on rp(2)
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(1): {"MEMORY_MB": 3584}})); err != nil {
		t.Fatal(err)
	}
	same(t, candidateUUIDs(t, s, mem(1024)), rp(2))
	same(t, candidateUUIDs(t, s, mem(512)), rp(1), rp(2))
}

func TestCandidatesSeededOrder(t *testing.T) {
	s := New()
	for i := 0; i < 50; i++ {
		mustCreate(t, s, i, "", gold)
	}
	all := candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Seed: cid(1)})
	if len(all) != 50 || slices.IsSorted(all) {
		t.Fatalf("seeded order looks like UUID order: %v", all)
	}
	for _, limit := range []int{1, 5, 49} {
		same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Seed: cid(1), Limit: limit}), all[:limit]...)
	}
	again := candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Seed: cid(1)})
	same(t, again, all...)
	other := candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Seed: cid(2)})
	if other[0] == all[0] && other[1] == all[1] {
		t.Fatalf("different seeds give the same order")
	}
}

// Placement's seeded order is the one rendezvous ranking of the scheduler:
// the node sched.RankNodes puts first for a server is the candidate
// Placement offers first for it.
func TestCandidatesSeededOrderIsRankNodes(t *testing.T) {
	s := New()
	for i := 0; i < 30; i++ {
		mustCreate(t, s, i, "", gold)
	}
	for seed := 1; seed <= 20; seed++ {
		all := candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor, Seed: cid(seed)})
		same(t, sched.RankNodes(all, cid(seed)), all...)
	}
}

func TestProvidersFilter(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", gold, "CUSTOM_RAID")
	mustCreate(t, s, 2, rp(1), vmInv(4, 4096, 40))
	mustCreate(t, s, 3, "", nil)
	list := func(f ProviderFilter) []string {
		ps, err := s.Providers(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.UUID)
		}
		return out
	}
	same(t, list(ProviderFilter{}), rp(1), rp(2), rp(3))
	same(t, list(ProviderFilter{Name: "rp-2"}), rp(2))
	same(t, list(ProviderFilter{UUID: rp(3)}), rp(3))
	same(t, list(ProviderFilter{UUID: rp(3), Name: "rp-2"}))
	same(t, list(ProviderFilter{UUID: "junk"}))
	same(t, list(ProviderFilter{InTree: rp(2)}), rp(1), rp(2))
	same(t, list(ProviderFilter{Required: []string{"!CUSTOM_RAID"}}), rp(2), rp(3))
	same(t, list(ProviderFilter{Resources: map[string]int64{"VCPU": 4}}), rp(2))
	same(t, list(ProviderFilter{Resources: map[string]int64{"VCPU": 5}}))
	if _, err := s.Providers(ProviderFilter{Required: []string{"x"}}); err == nil {
		t.Fatal("invalid trait accepted")
	}
}

// The index-driven search must agree with a plain scan.
func TestCandidatesMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := New()
	classes := []string{"VCPU", "CUSTOM_A", "CUSTOM_B"}
	traits := []string{"CUSTOM_T0", "CUSTOM_T1", "CUSTOM_T2", "CUSTOM_T3"}
	for i := 0; i < 400; i++ {
		inv := map[string]Inventory{}
		for _, rc := range classes {
			if r.IntN(2) == 0 {
				inv[rc] = Inventory{Total: int64(1 + r.IntN(4))}
			}
		}
		var ts []string
		for _, tr := range traits {
			if r.IntN(3) == 0 {
				ts = append(ts, tr)
			}
		}
		p := mustCreate(t, s, i, "", inv, ts...)
		if r.IntN(3) > 0 {
			if _, err := s.SetAggregates(p.UUID, 0, []string{agg(r.IntN(3)), agg(r.IntN(3))}); err != nil {
				t.Fatal(err)
			}
		}
		if rc := classes[r.IntN(3)]; inv[rc].Total > 0 && r.IntN(2) == 0 {
			if err := s.SetAllocations(cid(i), alloc("p", nil, allocs{p.UUID: {rc: 1}})); err != nil {
				t.Fatal(err)
			}
		}
	}
	for n := 0; n < 300; n++ {
		q := CandidateQuery{Resources: map[string]int64{classes[r.IntN(3)]: int64(1 + r.IntN(2))}}
		for _, tr := range traits {
			switch r.IntN(4) {
			case 0:
				q.Required = append(q.Required, tr)
			case 1:
				q.Required = append(q.Required, "!"+tr)
			}
		}
		switch r.IntN(4) {
		case 0:
			q.MemberOf = [][]string{{agg(r.IntN(3))}}
		case 1:
			q.MemberOf = [][]string{{agg(0), agg(1 + r.IntN(2))}, {agg(r.IntN(3))}}
		}
		var want []string
		for i := 0; i < 400; i++ {
			if bruteMatch(s.providers[rp(i)], q) {
				want = append(want, rp(i))
			}
		}
		same(t, candidateUUIDs(t, s, q), want...)
		if len(want) > 3 {
			q.Limit = 3
			same(t, candidateUUIDs(t, s, q), want[:3]...)
		}
		q.Limit, q.Seed = 0, cid(n)
		seeded := candidateUUIDs(t, s, q)
		slices.Sort(seeded)
		same(t, seeded, want...)
	}
	checkInvariants(t, s)
}

// bruteMatch is a reference implementation of the candidate filter.
func bruteMatch(p *provider, q CandidateQuery) bool {
	for _, term := range q.Required {
		if forbidden, ok := strings.CutPrefix(term, "!"); ok {
			if slices.Contains(p.traits, forbidden) {
				return false
			}
		} else if !slices.Contains(p.traits, term) {
			return false
		}
	}
	for _, g := range q.MemberOf {
		if !slices.ContainsFunc(g, func(a string) bool { return slices.Contains(p.aggs, a) }) {
			return false
		}
	}
	for rc, n := range q.Resources {
		sl := p.slot(rc)
		if sl == nil || n < sl.inv.MinUnit || n > sl.inv.MaxUnit || n%sl.inv.StepSize != 0 || sl.used+n > sl.cap {
			return false
		}
	}
	return true
}

// Readers never write: concurrent queries are race-free.
func TestConcurrentReaders(t *testing.T) {
	s := New()
	for i := 0; i < 100; i++ {
		mustCreate(t, s, i, "", gold, "CUSTOM_RAID")
	}
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				_, _ = s.Candidates(CandidateQuery{Resources: bmFlavor, Required: []string{"CUSTOM_RAID"}, Seed: cid(i), Limit: 3})
				_, _ = s.Providers(ProviderFilter{InTree: rp(i)})
				_, _ = s.Usages(rp(i))
				_, _ = s.Allocations(cid(i))
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

func ExampleStore_Candidates() {
	s := New()
	_, _ = s.CreateProvider(Provider{UUID: "b1b1b1b1-0000-4000-8000-000000000001", Name: "hv-1",
		Inventories: map[string]Inventory{"VCPU": {Total: 8, Reserved: 2, AllocationRatio: 16},
			"MEMORY_MB": {Total: 65536}, "DISK_GB": {Total: 1000}}})
	_, _ = s.CreateProvider(Provider{UUID: "b1b1b1b1-0000-4000-8000-000000000002", Name: "node-1",
		Inventories: map[string]Inventory{"CUSTOM_GOLD": {Total: 1}}})
	res, _ := ParseResources("VCPU:1,MEMORY_MB:1024,DISK_GB:1")
	cs, _ := s.Candidates(CandidateQuery{Resources: res})
	for _, c := range cs {
		fmt.Println(c.Summaries[0].Name, c.Summaries[0].Resources["VCPU"].Capacity)
	}
	// Output: hv-1 96
}
