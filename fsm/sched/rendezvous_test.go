package sched

import (
	"fmt"
	"slices"
	"testing"
)

func TestRankNodesStable(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	a := RankNodes(nodes, "srv")
	b := RankNodes([]string{"n4", "n3", "n2", "n1"}, "srv")
	if !slices.Equal(a, b) {
		t.Fatalf("%v vs %v", a, b)
	}
	if !slices.Equal(nodes, []string{"n1", "n2", "n3", "n4"}) {
		t.Fatal("RankNodes changed its input")
	}
}

// A canonical UUID is keyed by its own bits, any other name by a hash.
func TestKey(t *testing.T) {
	hi, lo := Key("01234567-89ab-cdef-0123-456789abcdef")
	if hi != 0x0123456789abcdef || lo != 0x0123456789abcdef {
		t.Fatalf("uuid key %x %x", hi, lo)
	}
	for _, s := range []string{"host-1", "01234567-89AB-CDEF-0123-456789ABCDEF", "01234567x89ab-cdef-0123-456789abcdef"} {
		h1, l1 := Key(s)
		if h1 == 0x0123456789abcdef || h1 == 0 && l1 == 0 {
			t.Fatalf("%q keyed as a UUID", s)
		}
	}
	if a, b := Rendezvous("s", "host-1"), Rendezvous("s", "host-2"); a == b {
		t.Fatal("different hosts, equal scores")
	}
}

// Every node comes first for about as many servers.
func TestRankNodesSpreads(t *testing.T) {
	var nodes []string
	for i := range 4 {
		nodes = append(nodes, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	}
	first := map[string]int{}
	for i := range 4000 {
		first[RankNodes(nodes, fmt.Sprintf("server-%d", i))[0]]++
	}
	for _, n := range nodes {
		if c := first[n]; c < 850 || c > 1150 {
			t.Fatalf("first choices skewed: %v", first)
		}
	}
}
