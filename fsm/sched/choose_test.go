package sched

import (
	"fmt"
	"reflect"
	"testing"
)

func TestChooseHostFewestServersWins(t *testing.T) {
	c := []Candidate{{"a", 3}, {"b", 1}, {"c", 2}}
	for i := 0; i < 50; i++ {
		if got := ChooseHost(c, fmt.Sprintf("srv-%d", i)); got != "b" {
			t.Fatalf("got %s, want b (fewest servers)", got)
		}
	}
}

func TestChooseHostEmpty(t *testing.T) {
	if got := ChooseHost(nil, "x"); got != "" {
		t.Fatalf("got %q for no candidates", got)
	}
}

func TestChooseHostDeterministicAndOrderFree(t *testing.T) {
	a := []Candidate{{"h1", 0}, {"h2", 0}, {"h3", 0}}
	b := []Candidate{{"h3", 0}, {"h1", 0}, {"h2", 0}}
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("server-%04d", i)
		if x, y := ChooseHost(a, id), ChooseHost(b, id); x != y {
			t.Fatalf("%s: %s vs %s depending on candidate order", id, x, y)
		}
	}
}

// Placing servers one at a time with the count weigher keeps hosts within
// one server of each other.
func TestChooseHostBalances(t *testing.T) {
	hosts := []Candidate{{"h1", 0}, {"h2", 0}, {"h3", 0}, {"h4", 0}, {"h5", 0}}
	for i := 0; i < 1000; i++ {
		name := ChooseHost(hosts, fmt.Sprintf("s%d", i))
		for j := range hosts {
			if hosts[j].Name == name {
				hosts[j].Servers++
			}
		}
	}
	for _, h := range hosts {
		if h.Servers != 200 {
			t.Fatalf("unbalanced: %+v", hosts)
		}
	}
}

// With equal counts, ties spread evenly over hosts by the rendezvous hash.
func TestRendezvousSpreadsTies(t *testing.T) {
	hosts := []Candidate{{"h1", 0}, {"h2", 0}, {"h3", 0}}
	count := map[string]int{}
	for i := 0; i < 3000; i++ {
		count[ChooseHost(hosts, fmt.Sprintf("id-%d", i))]++
	}
	for _, h := range hosts {
		if n := count[h.Name]; n < 850 || n > 1150 {
			t.Fatalf("tie-break skewed: %v", count)
		}
	}
}

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

// Reassign places each server as ChooseHost would, given the plan so far.
func TestReassignAgreesWithChooseHost(t *testing.T) {
	cands := []Candidate{{"h1", 1}, {"h2", 0}, {"h3", 1}, {"h4", 3}}
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("srv-%02d", i))
	}
	cur := append([]Candidate(nil), cands...)
	for _, a := range Reassign(ids, cands) {
		if want := ChooseHost(cur, a.ServerID); a.Host != want {
			t.Fatalf("%s planned on %s, ChooseHost says %s", a.ServerID, a.Host, want)
		}
		for i := range cur {
			if cur[i].Name == a.Host {
				cur[i].Servers++
			}
		}
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

func BenchmarkChooseHost(b *testing.B) {
	hosts := make([]Candidate, 100)
	for i := range hosts {
		hosts[i] = Candidate{Name: fmt.Sprintf("host-%d", i), Servers: i % 7}
	}
	for b.Loop() {
		ChooseHost(hosts, "server-id")
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
	for b.Loop() {
		Reassign(ids, cands)
	}
}
