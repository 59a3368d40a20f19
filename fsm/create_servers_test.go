package fsm

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Apply answers every server of a CreateServers entry on its own, in order.
func TestApplyCreateServersAnswersEach(t *testing.T) {
	a := bareMetalFixture(t)
	boot := func(i int) CreateServer {
		c := CreateServer{ID: sid(i), Name: "s", FlavorID: "bm", ImageRef: "img"}
		a.s.Prepare(&c)
		return c
	}
	s0, s1 := boot(0), boot(1)
	dup := s0
	bad := CreateServer{ID: sid(3), Name: "s", FlavorID: "nope", ImageRef: "img"}
	r := a.apply(&CreateServers{Meta: at(3), Servers: []CreateServer{s0, dup, bad, s1}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	res := r.Value.(BatchResult)
	if len(res) != 4 || res[0].Err != nil || !errors.Is(res[1].Err, ErrConflict) || !errors.Is(res[2].Err, ErrInvalid) || res[3].Err != nil {
		t.Fatalf("results %+v", res)
	}
	for _, id := range []string{sid(0), sid(1)} {
		srv, err := a.s.Server(id)
		if err != nil || !srv.CreatedAt.Equal(at(3).At) {
			t.Fatalf("server %s: %+v, %v (want created at the entry's time)", id, srv, err)
		}
	}
	for _, c := range []*CreateServers{{Meta: at(4)}, {Meta: at(4), Servers: make([]CreateServer, MaxCreateBatch+1)}} {
		if r := a.apply(c); !errors.Is(r.Err, ErrInvalid) {
			t.Fatalf("%d servers: %v, want ErrInvalid", len(c.Servers), r.Err)
		}
	}
}

// The servers of a batch are decided together: each counts the claims
// and hosts of those before it, so twelve boots for ten nodes claim ten
// distinct nodes, spread over the two hosts, and the two left over are
// "No valid host" with no candidate at all.
func TestScheduleDecidesABatchTogether(t *testing.T) {
	a := bareMetalFixture(t)
	batch := &CreateServers{Meta: at(1)}
	for i := range 12 {
		batch.Servers = append(batch.Servers, CreateServer{ID: sid(i), Name: fmt.Sprintf("s%d", i), FlavorID: "bm", ImageRef: "img"})
	}
	d, _ := a.s.Schedule(batch, nil)
	got := d.Command.(*CreateServers)
	nodes, hosts := map[string]bool{}, map[string]int{}
	for i, s := range got.Servers {
		if i >= 10 {
			if s.Host != "" || s.NoValidHost == "" || !d.NoCandidate[i] {
				t.Fatalf("server %d: host %q (%q), no candidate %v; want No valid host", i, s.Host, s.NoValidHost, d.NoCandidate[i])
			}
			continue
		}
		if len(s.Claim) != 1 || d.NoCandidate[i] {
			t.Fatalf("server %d: claim %v, no candidate %v", i, s.Claim, d.NoCandidate[i])
		}
		for n := range s.Claim {
			if nodes[n] {
				t.Fatalf("node %s given twice in one batch", n)
			}
			nodes[n] = true
		}
		hosts[s.Host]++
	}
	if hosts["h1"] != 5 || hosts["h2"] != 5 {
		t.Fatalf("hosts %v, want five servers on each ironic host", hosts)
	}
	r := a.apply(got)
	for i, res := range r.Value.(BatchResult) {
		if res.Err != nil {
			t.Fatalf("server %d: %v", i, res.Err)
		}
	}
	if !slices.Equal(d.NoCandidate, []bool{false, false, false, false, false, false, false, false, false, false, true, true}) {
		t.Fatalf("no candidate %v", d.NoCandidate)
	}
}
