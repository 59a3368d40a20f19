package plan

import (
	"fmt"
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

func TestRankNodesStable(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	a := RankNodes(nodes, "srv")
	b := RankNodes([]string{"n4", "n3", "n2", "n1"}, "srv")
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("%v vs %v", a, b)
	}
}

func BenchmarkChooseHost(b *testing.B) {
	hosts := make([]Candidate, 100)
	for i := range hosts {
		hosts[i] = Candidate{Name: fmt.Sprintf("host-%d", i), Servers: i % 7}
	}
	for i := 0; i < b.N; i++ {
		ChooseHost(hosts, "server-id")
	}
}
