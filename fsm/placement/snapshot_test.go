package placement

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// op is one randomly chosen mutation, drawn up front so it can be applied
// to several stores.
type op struct {
	kind     int
	a, b, c  int
	stale    bool
	traits   []string
	inv      map[string]Inventory
	alloc    map[int]map[string]int64
	consumer []int
}

var randClasses = []string{"VCPU", "MEMORY_MB", "CUSTOM_GOLD", "CUSTOM_SILVER"}
var randTraits = []string{"CUSTOM_A", "CUSTOM_B", "HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH"}

func randomOps(r *rand.Rand, n int) []op {
	ops := make([]op, n)
	for i := range ops {
		o := op{kind: r.IntN(9), a: r.IntN(12), b: r.IntN(24) - 12, c: r.IntN(8), stale: r.IntN(10) == 0}
		for _, t := range randTraits {
			if r.IntN(2) == 0 {
				o.traits = append(o.traits, t)
			}
		}
		o.inv = map[string]Inventory{}
		for _, rc := range randClasses {
			if r.IntN(2) == 0 {
				o.inv[rc] = Inventory{Total: int64(1 + r.IntN(8)), Reserved: int64(r.IntN(2)),
					AllocationRatio: []float64{0, 1, 1.5, 16}[r.IntN(4)]}
			}
		}
		o.alloc = map[int]map[string]int64{}
		for k := r.IntN(3); k > 0; k-- {
			o.alloc[r.IntN(12)] = map[string]int64{randClasses[r.IntN(4)]: int64(1 + r.IntN(3))}
		}
		o.consumer = []int{r.IntN(8), r.IntN(8)}
		ops[i] = o
	}
	return ops
}

func (o op) apply(s *Store) error {
	u := rp(o.a)
	g := uint64(0)
	if p, err := s.Provider(u); err == nil {
		g = p.Generation
	}
	if o.stale {
		g++
	}
	allocFor := func(c int) ConsumerAllocations {
		req := ConsumerAllocations{ProjectID: fmt.Sprintf("proj-%d", c%3), UserID: "u", Allocations: allocs{}}
		if a, ok := s.Allocations(cid(c)); ok {
			req.ConsumerGeneration = a.ConsumerGeneration
		}
		for n, res := range o.alloc {
			req.Allocations[rp(n)] = res
		}
		return req
	}
	switch o.kind {
	case 0, 1:
		parent := ""
		if o.b >= 0 {
			parent = rp(o.b)
		}
		_, err := s.CreateProvider(Provider{UUID: u, Name: fmt.Sprintf("n%d", o.a), ParentUUID: parent, Inventories: o.inv})
		return err
	case 2:
		return s.DeleteProvider(u, g)
	case 3:
		if o.c%2 == 0 {
			_, err := s.SetInventoriesAndTraits(u, g, o.inv, o.traits)
			return err
		}
		_, err := s.SetInventories(u, g, o.inv)
		return err
	case 4:
		_, err := s.SetTraits(u, g, o.traits)
		return err
	case 5:
		_, err := s.SetAggregates(u, g, []string{agg(o.c % 3)})
		return err
	case 6:
		return s.SetAllocations(cid(o.c), allocFor(o.c))
	case 7:
		reqs := map[string]ConsumerAllocations{}
		for i, c := range o.consumer {
			req := allocFor(c)
			if i == 1 && c%2 == 0 {
				req.Allocations = nil // deletes the consumer
			}
			reqs[cid(c)] = req
		}
		return s.SetAllocationsMulti(reqs)
	default:
		parent := ""
		if o.b >= 0 {
			parent = rp(o.b)
		}
		_, err := s.UpdateProvider(u, g, fmt.Sprintf("n%d", o.a+o.c%2), parent)
		return err
	}
}

func TestDeterminismRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		ops := randomOps(rand.New(rand.NewPCG(seed, 99)), 400)
		a, b := New(), New()
		okCount := 0
		for i, o := range ops {
			ea, eb := o.apply(a), o.apply(b)
			if fmt.Sprint(ea) != fmt.Sprint(eb) {
				t.Fatalf("seed %d op %d: errors differ: %v / %v", seed, i, ea, eb)
			}
			var pe *Error
			if ea != nil && !errors.As(ea, &pe) {
				t.Fatalf("seed %d op %d: foreign error type %T", seed, i, ea)
			}
			if ea == nil {
				okCount++
			}
			if i%50 == 0 {
				checkInvariants(t, a)
			}
		}
		checkInvariants(t, a)
		if okCount < 100 {
			t.Fatalf("seed %d: only %d of %d ops succeeded; the test exercises too little", seed, okCount, len(ops))
		}
		ea, eb := encode(t, a), encode(t, b)
		if !bytes.Equal(ea, eb) {
			t.Fatalf("seed %d: encodings differ", seed)
		}
		r, err := Restore(bytes.NewReader(ea))
		if err != nil {
			t.Fatalf("seed %d: restore: %v", seed, err)
		}
		checkInvariants(t, r)
		if !bytes.Equal(encode(t, r), ea) {
			t.Fatalf("seed %d: round trip changed the encoding", seed)
		}
		c := a.Clone()
		checkInvariants(t, c)
		if !Equal(c, a) {
			t.Fatalf("seed %d: clone differs", seed)
		}
		// The restored and cloned stores behave the same as the original.
		more := randomOps(rand.New(rand.NewPCG(seed, 7)), 100)
		for i, o := range more {
			e1, e2, e3 := o.apply(a), o.apply(r), o.apply(c)
			if fmt.Sprint(e1) != fmt.Sprint(e2) || fmt.Sprint(e1) != fmt.Sprint(e3) {
				t.Fatalf("seed %d op %d after restore: %v / %v / %v", seed, i, e1, e2, e3)
			}
		}
		if !Equal(a, r) || !Equal(a, c) {
			t.Fatalf("seed %d: stores diverged after restore/clone", seed)
		}
		// Slot numbers differ between a and its restored copy; answers must not.
		for _, rc := range randClasses {
			for _, q := range []CandidateQuery{
				{Resources: map[string]int64{rc: 1}},
				{Resources: map[string]int64{rc: 1}, Limit: 2, Seed: "s"},
				{Resources: map[string]int64{rc: 1}, Required: []string{"!CUSTOM_A"}, MemberOf: [][]string{{agg(0), agg(1)}}},
			} {
				ca, _ := a.Candidates(q)
				cr, _ := r.Candidates(q)
				ja, _ := json.Marshal(ca)
				jr, _ := json.Marshal(cr)
				if !bytes.Equal(ja, jr) {
					t.Fatalf("seed %d: candidates differ after restore:\n%s\n%s", seed, ja, jr)
				}
			}
		}
	}
}

func TestCloneIndependence(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(8, 8192, 80), "CUSTOM_A")
	mustCreate(t, s, 2, rp(1), gold)
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(1): {"VCPU": 2}})); err != nil {
		t.Fatal(err)
	}
	before := encode(t, s)
	c := s.Clone()
	if _, err := c.SetTraits(rp(1), 1, []string{"CUSTOM_B"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAllocations(cid(1), alloc("p", Gen(0), allocs{rp(2): {"CUSTOM_GOLD": 1}})); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteProvider(rp(1), 3); err == nil {
		t.Fatal("deleted a parent")
	}
	if _, err := c.UpdateProvider(rp(2), 1, "root", ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(t, s), before) {
		t.Fatal("changing the clone changed the original")
	}
	checkInvariants(t, s)
	checkInvariants(t, c)
	same(t, candidateUUIDs(t, s, CandidateQuery{Resources: bmFlavor}), rp(2))
	same(t, candidateUUIDs(t, c, CandidateQuery{Resources: bmFlavor}))
}

func TestSnapshotFormat(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", map[string]Inventory{"VCPU": {Total: 8, Reserved: 2, AllocationRatio: 16}}, "CUSTOM_A")
	mustCreate(t, s, 2, rp(1), gold)
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(2): {"CUSTOM_GOLD": 1}})); err != nil {
		t.Fatal(err)
	}
	got := string(encode(t, s))
	want := `{"format":"corral.placement","version":1,"providers":2,"consumers":1}
{"uuid":"` + rp(1) + `","name":"rp-1","generation":0,"traits":["CUSTOM_A"],"inventories":{"VCPU":{"total":8,"reserved":2,"min_unit":1,"max_unit":8,"step_size":1,"allocation_ratio":16}}}
{"uuid":"` + rp(2) + `","name":"rp-2","parent":"` + rp(1) + `","generation":1,"inventories":{"CUSTOM_GOLD":{"total":1,"reserved":0,"min_unit":1,"max_unit":1,"step_size":1,"allocation_ratio":1}}}
{"uuid":"` + cid(1) + `","project_id":"p","user_id":"user","generation":0,"allocations":{"` + rp(2) + `":{"CUSTOM_GOLD":1}}}
{"end":"corral.placement"}
`
	if got != want {
		t.Fatalf("encoding:\n%s\nwant:\n%s", got, want)
	}
	var empty bytes.Buffer
	if _, err := New().WriteTo(&empty); err != nil {
		t.Fatal(err)
	}
	if r, err := Restore(&empty); err != nil || r.Len() != 0 {
		t.Fatalf("empty round trip: %v", err)
	}
}

// The hand-written encoder agrees with encoding/json, awkward names
// included.
func TestSnapshotMatchesEncodingJSON(t *testing.T) {
	s := New()
	names := []string{`quote"d`, `back\slash`, "tab-free ünïcode ✓", "<html>&amp;", "x"}
	for i, name := range names {
		if _, err := s.CreateProvider(Provider{UUID: rp(i), Name: name,
			Inventories: map[string]Inventory{"VCPU": {Total: 8, AllocationRatio: []float64{1e-7, 0.1, 3, 1e21, 2.5e22}[i]},
				"CUSTOM_GOLD": {Total: 1}}, Traits: []string{"CUSTOM_Z", "CUSTOM_A"}, Aggregates: []string{agg(1)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetAllocations(cid(1), alloc(`pro"ject`, nil, allocs{rp(2): {"VCPU": 1}, rp(0): {"CUSTOM_GOLD": 1}})); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(encode(t, s)), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != 1+len(names)+1+1 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, line := range lines {
		var v any
		switch {
		case i == 0:
			v = &snapHeader{}
		case i <= len(names):
			v = &providerRec{}
		case i == len(names)+1:
			v = &consumerRec{}
		default:
			v = &snapTrailer{}
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if b.String() != line {
			t.Fatalf("line %d:\n%s\nencoding/json:\n%s", i, line, b.String())
		}
	}
}

func TestSnapshotCorruption(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", gold)
	mustCreate(t, s, 2, rp(1), gold)
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(2): {"CUSTOM_GOLD": 1}})); err != nil {
		t.Fatal(err)
	}
	good := string(encode(t, s))
	for name, bad := range map[string]string{
		"truncated":      good[:len(good)-30],
		"no trailer":     strings.Replace(good, `{"end":"corral.placement"}`, "", 1),
		"version":        strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown field":  strings.Replace(good, `"generation":0,`, `"generation":0,"x":1,`, 1),
		"order":          strings.Replace(strings.Replace(good, rp(1), "X", -1), rp(2), rp(1), -1),
		"parent":         strings.Replace(good, `"parent":"`+rp(1), `"parent":"`+rp(3), 1),
		"over capacity":  strings.Replace(good, `{"CUSTOM_GOLD":1}}}`, `{"CUSTOM_GOLD":2}}}`, 1),
		"bad inventory":  strings.Replace(good, `"total":1,`, `"total":0,`, 1),
		"denormal ratio": strings.Replace(good, `"allocation_ratio":1}`, `"allocation_ratio":0}`, 1),
		"loop":           strings.Replace(good, `"name":"rp-1",`, `"name":"rp-1","parent":"`+rp(2)+`",`, 1),
		"dup name":       strings.Replace(good, `"name":"rp-2"`, `"name":"rp-1"`, 1),
	} {
		r := s.Clone()
		_, err := r.ReadFrom(strings.NewReader(bad))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("%s: error %v", name, err)
		}
		if !Equal(r, s) {
			t.Errorf("%s: failed ReadFrom changed the store", name)
		}
	}
	r := New()
	n, err := r.ReadFrom(strings.NewReader(good))
	if err != nil || n != int64(len(good)) || !Equal(r, s) {
		t.Fatalf("ReadFrom: %d %v", n, err)
	}
}
