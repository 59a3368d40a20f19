package placement

import "testing"

// Pending usage (claims decided but not yet written) hides providers that
// could not take the request on top of it, and only those.
func TestCandidatesPendingUsage(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(4, 8192, 100))
	mustCreate(t, s, 2, "", gold)
	mustCreate(t, s, 3, "", gold)

	q := CandidateQuery{Resources: bmFlavor, Pending: map[string]map[string]int64{rp(2): {"CUSTOM_GOLD": 1}}}
	same(t, candidateUUIDs(t, s, q), rp(3))
	q.Pending[rp(3)] = map[string]int64{"CUSTOM_GOLD": 1}
	same(t, candidateUUIDs(t, s, q), []string(nil)...)

	// A hypervisor stays a candidate while the pending usage leaves room.
	vm := map[string]int64{"VCPU": 2, "MEMORY_MB": 1024}
	q = CandidateQuery{Resources: vm, Pending: map[string]map[string]int64{rp(1): {"VCPU": 2}}}
	same(t, candidateUUIDs(t, s, q), rp(1))
	q.Pending[rp(1)]["VCPU"] = 3
	same(t, candidateUUIDs(t, s, q), []string(nil)...)
	// Pending usage of another class does not count.
	q.Pending[rp(1)] = map[string]int64{"DISK_GB": 100}
	same(t, candidateUUIDs(t, s, q), rp(1))

	// The summaries report the written usage only.
	cs, err := s.Candidates(CandidateQuery{Resources: vm, Pending: map[string]map[string]int64{rp(1): {"VCPU": 1}}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("candidates = %v, %v", cs, err)
	}
	if got := cs[0].Summaries[0].Resources["VCPU"].Used; got != 0 {
		t.Fatalf("summary used = %d, want 0", got)
	}
	checkInvariants(t, s)
}

func TestFitsWith(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(4, 8192, 100))
	mustCreate(t, s, 2, "", gold)
	vm := map[string]int64{"VCPU": 2, "MEMORY_MB": 1024}
	cases := []struct {
		prov    string
		res     map[string]int64
		pending map[string]int64
		want    bool
	}{
		{rp(1), vm, nil, true},
		{rp(1), vm, map[string]int64{"VCPU": 2}, true},
		{rp(1), vm, map[string]int64{"VCPU": 3}, false},
		{rp(1), vm, map[string]int64{"MEMORY_MB": 7168}, true},
		{rp(1), vm, map[string]int64{"MEMORY_MB": 7169}, false},
		{rp(2), bmFlavor, nil, true},
		{rp(2), bmFlavor, map[string]int64{"CUSTOM_GOLD": 1}, false},
		{rp(2), vm, nil, false},       // no such inventory
		{rp(3), bmFlavor, nil, false}, // unknown provider
		{rp(2), nil, nil, false},      // nothing requested
	}
	for i, c := range cases {
		if got := s.FitsWith(c.prov, c.res, c.pending); got != c.want {
			t.Errorf("case %d: FitsWith(%s, %v, %v) = %t, want %t", i, c.prov, c.res, c.pending, got, c.want)
		}
	}
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(2): bmFlavor})); err != nil {
		t.Fatal(err)
	}
	if s.FitsWith(rp(2), bmFlavor, nil) {
		t.Error("a taken node still fits")
	}
}
