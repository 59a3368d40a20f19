package fsm

import (
	"errors"
	"fmt"
	"testing"
)

func nodeID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i) }

func goldClaim(nodes ...int) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, i := range nodes {
		out[nodeID(i)] = map[string]int64{"CUSTOM_BAREMETAL_GOLD": 1}
	}
	return out
}

// A create that Apply rejects leaves no trace: in particular no placement
// allocation for the claim it carried (a drained host used to be checked
// only after the claim was written).
func TestRejectedCreateLeavesNoClaim(t *testing.T) {
	a := bareMetalFixture(t)
	a.ok(&SetHostDrain{Meta: at(1), Name: "h1", Drained: true})
	before := a.s.Digest()
	r := a.apply(&CreateServer{Meta: at(2), ID: sid(1), Name: "x", FlavorID: "bm", ImageRef: "img",
		Host: "h1", Claim: goldClaim(3)})
	if !errors.Is(r.Err, ErrStaleDecision) {
		t.Fatalf("create on a drained host: want a stale decision, got %v", r.Err)
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected create changed the state (left its claim behind)")
	}
	// The node is still free: another server can claim it.
	s := a.ok(&CreateServer{Meta: at(3), ID: sid(2), Name: "y", FlavorID: "bm", ImageRef: "img",
		Host: "h2", Claim: goldClaim(3)}).(Server)
	if s.ClaimedNode != nodeID(3) {
		t.Fatalf("claimed node %q, want %s", s.ClaimedNode, nodeID(3))
	}
}

// A claim of two nodes is refused the same way on every peer, whatever
// the order a map would be walked in, and changes nothing.
func TestClaimOfTwoNodesRefusedDeterministically(t *testing.T) {
	var first string
	for i := 0; i < 50; i++ {
		a := bareMetalFixture(t)
		before := a.s.Digest()
		r := a.apply(&CreateServer{Meta: at(2), ID: sid(1), Name: "x", FlavorID: "bm", ImageRef: "img",
			Host: "h1", Claim: goldClaim(7, 2, 5)})
		if !errors.Is(r.Err, ErrInvalid) {
			t.Fatalf("a claim of three nodes: want ErrInvalid, got %v", r.Err)
		}
		if a.s.Digest() != before {
			t.Fatal("a rejected claim changed the state")
		}
		if i == 0 {
			first = r.Err.Error()
		} else if r.Err.Error() != first {
			t.Fatalf("Apply answered differently on the same entry:\n%s\n%s", first, r.Err)
		}
	}
}
