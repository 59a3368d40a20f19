package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm/placement"
)

// Prepare records the leader's decisions in c as the leader does before
// committing (Schedule, with nothing to avoid): tests look at the
// decision, then apply it.
func (s *Store) Prepare(c Command) {
	d, ok := s.Schedule(c, nil)
	if !ok {
		return
	}
	switch c := c.(type) {
	case *CreateServer:
		*c = *d.Command.(*CreateServer)
	case *CreateServers:
		*c = *d.Command.(*CreateServers)
	case *CreateServerSets:
		*c = *d.Command.(*CreateServerSets)
	case *AdoptServer:
		*c = *d.Command.(*AdoptServer)
	case *ReassignServers:
		*c = *d.Command.(*ReassignServers)
	default:
		panic(fmt.Sprintf("Prepare: %T carries a decision the test helper does not know", c))
	}
}

// decideAndApply schedules c and applies the decision, as the leader's
// first attempt would.
func (a *applier) decideAndApply(c Command) Result {
	a.tb.Helper()
	d, ok := a.s.Schedule(c, nil)
	if !ok {
		return a.apply(c)
	}
	return a.apply(d.Command)
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
		if r := a.decideAndApply(c); r.Err != nil {
			t.Fatal(r.Err)
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
	if r := a.decideAndApply(c); r.Err != nil {
		t.Fatal(r.Err)
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

// A decision a deposed leader left in the command is not kept: every
// decision is this leader's, on its current state.
func TestScheduleForgetsAnEarlierDecision(t *testing.T) {
	a := bareMetalFixture(t)
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img",
		NoValidHost: "No valid host was found. (decided on an old state)"}
	if r := a.decideAndApply(c); r.Err != nil {
		t.Fatal(r.Err)
	}
	if s, _ := a.s.Server(c.ID); s.Status != StatusBuild {
		t.Fatalf("server %s %v: the old decision was kept", s.Status, s.Fault)
	}
	srv, _ := a.s.Server(c.ID)
	other := map[string]string{"h1": "h2", "h2": "h1"}[srv.Host]
	a.ok(&SetHostStatus{Meta: at(2), Name: srv.Host, Status: HostDown})
	plan := &ReassignServers{Meta: at(3), From: srv.Host, Reason: ReasonHostDown,
		Moves: []Move{{ServerID: sid(1), FromHost: srv.Host, FromEpoch: 7, ToHost: "nowhere"}}}
	d, _ := a.s.Schedule(plan, nil)
	want := []Move{{ServerID: sid(1), FromHost: srv.Host, FromEpoch: 1, ToHost: other}}
	if got := d.Command.(*ReassignServers).Moves; !slices.Equal(got, want) {
		t.Fatalf("plan %+v, want %+v: the old moves were kept", got, want)
	}
}

// Schedule is read-only: it changes neither the state nor the command it
// decides; the decision comes back in a copy.
func TestScheduleChangesNothing(t *testing.T) {
	a := bareMetalFixture(t)
	before := a.s.Digest()
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	batch := &CreateServers{Meta: at(1), Servers: []CreateServer{{ID: sid(2), Name: "s", FlavorID: "bm", ImageRef: "img"}}}
	for _, cmd := range []Command{c, batch} {
		d, ok := a.s.Schedule(cmd, []string{"h2"})
		if !ok || d.Command == cmd {
			t.Fatalf("%T: decided %v in place (%v)", cmd, ok, d.Command)
		}
	}
	if c.Host != "" || c.Claim != nil || c.Avoid != nil || batch.Servers[0].Host != "" || batch.Servers[0].Avoid != nil {
		t.Fatalf("the commands scheduled were changed: %+v, %+v", c, batch.Servers[0])
	}
	if a.s.Digest() != before {
		t.Fatal("Schedule changed the state")
	}
	d, _ := a.s.Schedule(c, []string{"h2"})
	if got := d.Command.(*CreateServer); got.Host != "h1" || !slices.Equal(got.Avoid, []string{"h2"}) {
		t.Fatalf("decided host %q avoiding %v, want h1 avoiding h2 (recorded in the entry)", got.Host, got.Avoid)
	}
	if _, ok := a.s.Schedule(&CreateFlavor{Meta: at(0), Flavor: testFlavor("f", "f")}, nil); ok || Decides(&CreateFlavor{}) {
		t.Fatal("a flavor carries no decision")
	}
	for _, cmd := range []Command{&CreateServer{}, &CreateServers{}, &AdoptServer{}, &ReassignServers{}} {
		if !Decides(cmd) {
			t.Fatalf("%T carries the leader's decisions", cmd)
		}
	}
}

// A server that finds no resource provider at all says so, so that the
// leader may refresh the node mirror before "No valid host"; a server
// whose flavor is malformed does not (no sync can help it).
func TestScheduleReportsNoCandidate(t *testing.T) {
	a := serverFixture(t)
	f := testFlavor("bm", "bare-metal-gold")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	d, _ := a.s.Schedule(&CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}, nil)
	if !slices.Equal(d.NoCandidate, []bool{true}) || d.Command.(*CreateServer).NoValidHost == "" {
		t.Fatalf("no node at all: NoCandidate %v, decision %+v", d.NoCandidate, d.Command)
	}
	a.ok(&SetFlavorExtraSpecs{Meta: at(1), ID: "bm", Specs: map[string]string{"trait:CUSTOM_RAID": "yes"}})
	d, _ = a.s.Schedule(&CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}, nil)
	if !slices.Equal(d.NoCandidate, []bool{false}) {
		t.Fatalf("malformed flavor: NoCandidate %v", d.NoCandidate)
	}
}

// A refusal that deciding again cannot cure (the server's consumer already
// holds allocations in Placement) is a conflict, not a stale decision.
func TestClaimRefusedForGoodIsNotStale(t *testing.T) {
	a := bareMetalFixture(t)
	if err := a.s.st.placement.SetAllocations(sid(1), placement.ConsumerAllocations{ProjectID: "admin", UserID: "admin",
		Allocations: goldClaim(9)}); err != nil {
		t.Fatal(err)
	}
	c := &CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img"}
	r := a.decideAndApply(c)
	if !errors.Is(r.Err, ErrConflict) || errors.Is(r.Err, ErrStaleDecision) {
		t.Fatalf("apply: %v, want a conflict that is no stale decision", r.Err)
	}
}
