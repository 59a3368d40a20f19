package plan

import (
	"fmt"
	"reflect"
	"testing"
)

func TestReassignDeterministicAndOrderFree(t *testing.T) {
	ids := []string{"s3", "s1", "s2", "s9", "s7"}
	a := Reassign(ids, []Candidate{{"h1", 2}, {"h2", 0}, {"h3", 1}})
	b := Reassign([]string{"s9", "s7", "s3", "s2", "s1"}, []Candidate{{"h3", 1}, {"h2", 0}, {"h1", 2}})
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("plan depends on input order:\n%v\n%v", a, b)
	}
	if len(a) != len(ids) {
		t.Fatalf("%d assignments for %d servers", len(a), len(ids))
	}
}

func TestReassignBalancesOntoLeastLoaded(t *testing.T) {
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("srv-%02d", i))
	}
	got := map[string]int{"h1": 6, "h2": 2, "h3": 4}
	for _, a := range Reassign(ids, []Candidate{{"h1", 6}, {"h2", 2}, {"h3", 4}}) {
		got[a.Host]++
	}
	// 24 servers over 3 hosts: 8 each.
	for h, n := range got {
		if n != 8 {
			t.Fatalf("after the plan %s has %d servers: %v", h, n, got)
		}
	}
}

func TestReassignWithoutCandidates(t *testing.T) {
	if got := Reassign([]string{"a"}, nil); got != nil {
		t.Fatalf("got %v", got)
	}
}

func TestReassignTenThousand(t *testing.T) {
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-server", i*2654435761)
	}
	cands := make([]Candidate, 20)
	for i := range cands {
		cands[i] = Candidate{Name: fmt.Sprintf("host-%02d", i), Servers: 500}
	}
	plan := Reassign(ids, cands)
	count := map[string]int{}
	for _, a := range plan {
		count[a.Host]++
	}
	for _, c := range cands {
		if count[c.Name] != 500 {
			t.Fatalf("uneven plan: %v", count)
		}
	}
}

func BenchmarkReassign10k(b *testing.B) {
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("server-%06d", i)
	}
	cands := make([]Candidate, 20)
	for i := range cands {
		cands[i] = Candidate{Name: fmt.Sprintf("host-%02d", i), Servers: i}
	}
	b.ResetTimer()
	for b.Loop() {
		Reassign(ids, cands)
	}
}
