package fsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm/placement"
)

// Prepare records the leader's decisions in c as Decide does, without
// committing: tests look at the decision, then apply it.
func (s *Store) Prepare(c Command) {
	if p, ok := c.(leaderPrepared); ok {
		s.prepare(p)
	}
}

// commitVia is a Leader whose Commit applies through a, after running
// before (which may apply competing entries) on every attempt.
func commitVia(a *applier, attempts *int, before func(attempt int)) Leader {
	return Leader{Commit: func(_ context.Context, c Command) (uint64, error) {
		*attempts++
		if before != nil {
			before(*attempts)
		}
		r := a.apply(c)
		return a.index, r.Err
	}}
}

func capsFixture(t *testing.T, caps ...map[string]string) *applier {
	a := serverFixture(t)
	var nodes []Node
	for i, c := range caps {
		nodes = append(nodes, Node{UUID: nodeID(i), ResourceClass: "baremetal-gold",
			ProvisionState: "available", PowerState: "power off", Capabilities: c})
	}
	a.ok(&SyncNodes{Meta: at(0), Upserts: nodes})
	f := testFlavor("uefi", "bare-metal-uefi")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0", "capabilities:boot_mode": "uefi"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	return a
}

// A node that lacks a required capability is never claimed: with one
// bios and one uefi node free, every server of a uefi flavor claims the
// uefi node.
func TestCapabilityChoosesTheNode(t *testing.T) {
	bios, uefi := map[string]string{"boot_mode": "bios"}, map[string]string{"boot_mode": "uefi"}
	for i := 0; i < 40; i++ {
		a := capsFixture(t, bios, uefi)
		c := &CreateServer{Meta: at(1), ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), Name: "s", FlavorID: "uefi", ImageRef: "img"}
		var n int
		if _, err := a.s.Decide(context.Background(), c, commitVia(a, &n, nil)); err != nil {
			t.Fatal(err)
		}
		s, _ := a.s.Server(c.ID)
		if s.Status != StatusBuild || s.ClaimedNode != nodeID(1) {
			t.Fatalf("server %d: %s claiming %q (fault %v), want BUILD on the uefi node %s", i, s.Status, s.ClaimedNode, s.Fault, nodeID(1))
		}
	}
}

// With only nodes lacking the capability: "No valid host" (ERROR, no
// host), never a claim.
func TestCapabilityMissingEverywhereIsNoValidHost(t *testing.T) {
	a := capsFixture(t, map[string]string{"boot_mode": "bios"}, map[string]string{}, nil)
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "uefi", ImageRef: "img"}
	var n int
	if _, err := a.s.Decide(context.Background(), c, commitVia(a, &n, nil)); err != nil {
		t.Fatal(err)
	}
	s, _ := a.s.Server(c.ID)
	if s.Status != StatusError || s.Host != "" || s.ClaimedNode != "" || s.Claim != nil {
		t.Fatalf("server %s host %q claim %v, want ERROR without host or claim", s.Status, s.Host, s.Claim)
	}
	if !strings.Contains(s.Fault.Message, "No valid host") || !strings.Contains(s.Fault.Message, "boot_mode:uefi") {
		t.Fatalf("fault %q does not say which capability is missing", s.Fault.Message)
	}
	if _, ok := a.s.Placement().Allocations(c.ID); ok {
		t.Fatal("a server that found no host holds an allocation")
	}
}

// The mission's comma form: capabilities="supports_uefi,has_gpu" needs
// both, each "true".
func TestCapabilityCommaForm(t *testing.T) {
	a := capsFixture(t, map[string]string{"supports_uefi": "true"}, map[string]string{"supports_uefi": "true", "has_gpu": "true"})
	f := testFlavor("gpu", "bare-metal-gpu")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0", "capabilities": "supports_uefi,has_gpu"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	for i := 0; i < 10; i++ {
		c := &CreateServer{Meta: at(1), ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), Name: "s", FlavorID: "gpu", ImageRef: "img"}
		a.s.Prepare(c)
		if c.Host == "" || c.Claim[nodeID(1)] == nil {
			t.Fatalf("claim %v (%s), want node %s", c.Claim, c.NoValidHost, nodeID(1))
		}
	}
}

// A malformed flavor is "No valid host" with the reason, not a guess.
func TestMalformedSpecsAreNoValidHost(t *testing.T) {
	a := bareMetalFixture(t)
	a.ok(&SetFlavorExtraSpecs{Meta: at(1), ID: "bm", Specs: map[string]string{"trait:CUSTOM_RAID": "yes"}})
	c := &CreateServer{Meta: at(2), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	a.s.Prepare(c)
	if c.Host != "" || !strings.Contains(c.NoValidHost, "trait:CUSTOM_RAID") {
		t.Fatalf("host %q reason %q", c.Host, c.NoValidHost)
	}
}

// Entries committed between a decision and its own take what it chose,
// many times over: Decide decides again each time and the server gets the
// node that is left, never a stale-decision error.
func TestDecideAgainUntilTheDecisionHolds(t *testing.T) {
	a := bareMetalFixture(t)
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	var attempts int
	// Before each of the first eight attempts, another server claims the
	// node this decision chose.
	l := commitVia(a, &attempts, func(attempt int) {
		if attempt > 8 {
			return
		}
		a.ok(&CreateServer{Meta: at(1), ID: fmt.Sprintf("00000000-0000-4000-a000-%012d", attempt), Name: "x",
			FlavorID: "bm", ImageRef: "img", Host: "h1", Claim: c.Claim})
	})
	if _, err := a.s.Decide(context.Background(), c, l); err != nil {
		t.Fatalf("after %d attempts: %v", attempts, err)
	}
	s, _ := a.s.Server(c.ID)
	if attempts != 9 || s.Status != StatusBuild || s.ClaimedNode == "" {
		t.Fatalf("%d attempts, server %s on %q", attempts, s.Status, s.ClaimedNode)
	}
}

// When competing entries take every node, the answer is "No valid host",
// not a stale decision.
func TestDecideAgainUntilNothingFits(t *testing.T) {
	a := bareMetalFixture(t)
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	var attempts int
	l := commitVia(a, &attempts, func(attempt int) {
		if c.Claim != nil {
			a.ok(&CreateServer{Meta: at(1), ID: fmt.Sprintf("00000000-0000-4000-a000-%012d", attempt), Name: "x",
				FlavorID: "bm", ImageRef: "img", Host: "h1", Claim: c.Claim})
		}
	})
	if _, err := a.s.Decide(context.Background(), c, l); err != nil {
		t.Fatalf("after %d attempts: %v", attempts, err)
	}
	s, _ := a.s.Server(c.ID)
	if s.Status != StatusError || !strings.Contains(s.Fault.Message, "No valid host") {
		t.Fatalf("server %s %v, want ERROR No valid host", s.Status, s.Fault)
	}
	if attempts != 11 { // ten nodes taken one by one, then the ERROR entry
		t.Fatalf("%d attempts", attempts)
	}
}

// A decision a deposed leader left in the command is not kept.
func TestDecideForgetsAnEarlierDecision(t *testing.T) {
	a := bareMetalFixture(t)
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img",
		NoValidHost: "No valid host was found. (decided on an old state)"}
	var n int
	if _, err := a.s.Decide(context.Background(), c, commitVia(a, &n, nil)); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.s.Server(c.ID); s.Status != StatusBuild {
		t.Fatalf("server %s %v: the old decision was kept", s.Status, s.Fault)
	}
}

// A boot that finds no node refreshes the node mirror once and takes a
// node enrolled since the last sync.
func TestDecideRefreshesTheMirrorBeforeNoValidHost(t *testing.T) {
	a := serverFixture(t)
	f := testFlavor("bm", "bare-metal-gold")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	var attempts, refreshes int
	l := commitVia(a, &attempts, nil)
	l.RefreshNodes = func(context.Context) error {
		refreshes++
		a.ok(&SyncNodes{Meta: at(1), Upserts: []Node{{UUID: nodeID(1), ResourceClass: "baremetal-gold",
			ProvisionState: "available", PowerState: "power off"}}})
		return nil
	}
	c := &CreateServer{Meta: at(2), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	if _, err := a.s.Decide(context.Background(), c, l); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.s.Server(c.ID); s.Status != StatusBuild || s.ClaimedNode != nodeID(1) {
		t.Fatalf("server %s on %q (%v)", s.Status, s.ClaimedNode, s.Fault)
	}
	// Nothing left: one refresh more, then ERROR.
	c2 := &CreateServer{Meta: at(3), ID: sid(2), Name: "s", FlavorID: "bm", ImageRef: "img"}
	l.RefreshNodes = func(context.Context) error { refreshes++; return errors.New("Ironic is unreachable") }
	if _, err := a.s.Decide(context.Background(), c2, l); err != nil {
		t.Fatal(err)
	}
	if s, _ := a.s.Server(c2.ID); s.Status != StatusError || refreshes != 2 {
		t.Fatalf("server %s after %d refreshes", s.Status, refreshes)
	}
}

// Commands without decisions go straight to Commit, once.
func TestDecidePassesOtherCommandsThrough(t *testing.T) {
	a := newApplier(t)
	var attempts int
	l := commitVia(a, &attempts, nil)
	l.RefreshNodes = func(context.Context) error { t.Fatal("refresh for a flavor"); return nil }
	if _, err := a.s.Decide(context.Background(), &CreateFlavor{Meta: at(0), Flavor: testFlavor("f", "f")}, l); err != nil || attempts != 1 {
		t.Fatalf("%d commits: %v", attempts, err)
	}
}

// A refusal that deciding again cannot cure (the server's consumer already
// holds allocations in Placement) is answered as a conflict at once, not
// retried as a stale decision.
func TestClaimRefusedForGoodIsNotStale(t *testing.T) {
	a := bareMetalFixture(t)
	if err := a.s.st.placement.SetAllocations(sid(1), placement.ConsumerAllocations{ProjectID: "admin", UserID: "admin",
		Allocations: goldClaim(9)}); err != nil {
		t.Fatal(err)
	}
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	var attempts int
	_, err := a.s.Decide(context.Background(), c, commitVia(a, &attempts, nil))
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrStaleDecision) || attempts != 1 {
		t.Fatalf("after %d attempts: %v", attempts, err)
	}
}
