package fsm

import (
	"bytes"
	"errors"
	"testing"
)

// adoptFixture is bareMetalFixture with node 0 deployed (active) for
// instance sid(1), as a migration leaves it in Ironic before the server
// exists in corral.
func adoptFixture(t *testing.T) *applier {
	a := bareMetalFixture(t)
	a.ok(&SyncNodes{Meta: at(1), Upserts: []Node{{UUID: nodeID(0), ResourceClass: "baremetal-gold",
		ProvisionState: "active", PowerState: "power on", InstanceUUID: sid(1), AllocationUUID: sid(1),
		Properties: map[string]string{"cpus": "64", "memory_mb": "131072", "local_gb": "371"}}}})
	return a
}

func adoptCmd(sec int) *AdoptServer {
	f := testFlavor("old-bm", "baremetal")
	f.ExtraSpecs = map[string]string{"baremetal:deploy_kernel_id": "k1"}
	return &AdoptServer{Meta: at(sec), ID: sid(1), Name: "db-1", Flavor: f, ImageRef: "img-7",
		NodeUUID: nodeID(0), AllocationUUID: sid(1), ProjectID: "p1", UserID: "u1"}
}

func TestAdoptCommitsActiveServerOnItsNode(t *testing.T) {
	a := adoptFixture(t)
	c := adoptCmd(2)
	a.s.Prepare(c)
	if c.Host != "h1" && c.Host != "h2" {
		t.Fatalf("prepare chose %q, want an up ironic host", c.Host)
	}
	s := a.ok(c).(Server)
	if s.Status != StatusActive || s.TaskState != "" || s.NodeUUID != nodeID(0) || s.AllocationUUID != sid(1) ||
		s.Host != c.Host || s.Epoch != 1 || s.Flavor.Name != "baremetal" || s.ImageRef != "img-7" {
		t.Fatalf("adopted server = %+v", s)
	}
	if got := a.s.ReservedBy(nodeID(0)); got != sid(1) {
		t.Fatalf("node reserved by %q, want %s", got, sid(1))
	}
	ca, ok := a.s.Placement().Allocations(sid(1))
	if !ok || ca.ProjectID != "p1" || ca.UserID != "u1" || ca.Allocations[nodeID(0)]["CUSTOM_BAREMETAL_GOLD"] != 1 {
		t.Fatalf("claim = %+v (found %v)", ca, ok)
	}
	// The nine other nodes take nine new servers; a tenth finds none: the
	// adopted node is never offered.
	for i := 2; i <= 10; i++ {
		srv := a.boot(sid(i), "bm")
		if srv.ClaimedNode == nodeID(0) {
			t.Fatalf("server %s claimed the adopted node", srv.ID)
		}
	}
	if srv := a.boot(sid(11), "bm"); srv.Status != StatusError {
		t.Fatalf("an eleventh server on ten nodes: status %s, claimed %s", srv.Status, srv.ClaimedNode)
	}
}

func TestAdoptAgainChangesNothing(t *testing.T) {
	a := adoptFixture(t)
	c := adoptCmd(2)
	a.s.Prepare(c)
	first := a.ok(c).(Server)
	before := a.s.Digest()
	again := adoptCmd(9)
	a.s.Prepare(again)
	got := a.ok(again).(Server)
	if a.s.Digest() != before {
		t.Fatal("adopting an adopted server again changed the state")
	}
	if got.Host != first.Host || !got.UpdatedAt.Equal(first.UpdatedAt) {
		t.Fatalf("second adopt returned %+v, want the first %+v", got, first)
	}
}

func TestAdoptRejectionsChangeNothing(t *testing.T) {
	cases := []struct {
		name  string
		setup func(a *applier)
		edit  func(c *AdoptServer)
		want  error
	}{
		{"node not mirrored", nil, func(c *AdoptServer) { c.NodeUUID = "00000000-0000-4000-8000-000000000099" }, ErrNotFound},
		{"no host", nil, func(c *AdoptServer) { c.Host = "" }, ErrConflict},
		{"hypervisor host", nil, func(c *AdoptServer) { c.Host = "hv" }, ErrInvalid},
		{"drained host", func(a *applier) { a.ok(&SetHostDrain{Meta: at(1), Name: "h1", Drained: true}) }, nil, ErrStaleDecision},
		{"down host", func(a *applier) { a.ok(&SetHostStatus{Meta: at(1), Name: "h1", Status: HostDown}) }, nil, ErrStaleDecision},
		{"not a uuid", nil, func(c *AdoptServer) { c.ID = "db-1" }, ErrInvalid},
		{"no image", nil, func(c *AdoptServer) { c.ImageRef = "" }, ErrInvalid},
		{"no flavor", nil, func(c *AdoptServer) { c.Flavor = Flavor{} }, ErrInvalid},
		{"node holds another instance", nil, func(c *AdoptServer) { c.ID = sid(5); c.AllocationUUID = sid(5) }, ErrConflict},
		{"node holds another allocation", nil, func(c *AdoptServer) { c.AllocationUUID = sid(7) }, ErrConflict},
		{"node claimed by a new server", func(a *applier) {
			a.ok(&CreateServer{Meta: at(1), ID: sid(3), Name: "x", FlavorID: "bm", ImageRef: "img", Host: "h2", Claim: goldClaim(4)})
		}, func(c *AdoptServer) {
			c.NodeUUID = nodeID(4)
			c.ID, c.AllocationUUID = sid(4), ""
		}, ErrConflict},
		{"server exists elsewhere", func(a *applier) {
			a.ok(&CreateServer{Meta: at(1), ID: sid(1), Name: "x", FlavorID: "bm", ImageRef: "img", Host: "h2", Claim: goldClaim(4)})
		}, nil, ErrConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := adoptFixture(t)
			if tc.setup != nil {
				tc.setup(a)
			}
			c := adoptCmd(2)
			c.Host = "h1"
			if tc.edit != nil {
				tc.edit(c)
			}
			before := a.s.Digest()
			r := a.apply(c)
			if !errors.Is(r.Err, tc.want) {
				t.Fatalf("got %v, want %v", r.Err, tc.want)
			}
			if a.s.Digest() != before {
				t.Fatal("a rejected adopt changed the state")
			}
		})
	}
}

func TestAdoptIsDeterministicAndInSnapshots(t *testing.T) {
	var digests []string
	var snap bytes.Buffer
	for i := 0; i < 2; i++ {
		a := adoptFixture(t)
		c := adoptCmd(2)
		a.s.Prepare(c)
		a.ok(c)
		digests = append(digests, a.s.Digest())
		if i == 0 {
			if _, err := a.s.Snapshot().WriteTo(&snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	if digests[0] != digests[1] {
		t.Fatal("two stores applying the same adopt differ")
	}
	r := New()
	if err := r.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != digests[0] {
		t.Fatal("the snapshot does not carry the adopted server")
	}
	if got := r.ReservedBy(nodeID(0)); got != sid(1) {
		t.Fatalf("restored reservation of the node: %q", got)
	}
}

// An adopted server is like any other afterwards: a dead owner's plan
// moves it, and deleting it releases the node and its claim.
func TestAdoptedServerMovesAndDeletesLikeAnyOther(t *testing.T) {
	a := adoptFixture(t)
	c := adoptCmd(2)
	c.Host = "h1"
	a.ok(c)
	moves := a.s.PlanReassign("h1")
	if len(moves) != 1 || moves[0].ServerID != sid(1) || moves[0].ToHost != "h2" {
		t.Fatalf("plan for h1's death = %+v", moves)
	}
	a.ok(&SetHostStatus{Meta: at(3), Name: "h1", Status: HostDown})
	a.ok(&ReassignServers{Meta: at(3), Reason: ReasonHostDown, Moves: moves})
	s, _ := a.s.Server(sid(1))
	if s.Host != "h2" || s.Epoch != 2 || s.Status != StatusActive {
		t.Fatalf("after the move: %+v", s)
	}
	a.ok(&DeleteServer{Meta: at(4), ID: sid(1)})
	a.ok(&ReleaseNode{Meta: at(5), ServerID: sid(1), Host: "h2", Epoch: 2, NodeUUID: nodeID(0)})
	a.ok(&SetServerTask{Meta: at(5), ID: sid(1), Host: "h2", Epoch: 2, Status: StatusDeleted})
	if got := a.s.ReservedBy(nodeID(0)); got != "" {
		t.Fatalf("node still reserved by %s", got)
	}
	if _, ok := a.s.Placement().Allocations(sid(1)); ok {
		t.Fatal("the deleted server's claim is still there")
	}
	// Ironic undeployed it: the next sync shows it available, and a new
	// server may land on it.
	a.ok(&SyncNodes{Meta: at(6), Upserts: []Node{{UUID: nodeID(0), ResourceClass: "baremetal-gold",
		ProvisionState: "available", PowerState: "power off"}}})
	for i := 2; i <= 11; i++ {
		if srv := a.boot(sid(i), "bm"); srv.Status == StatusError {
			t.Fatalf("server %d of ten found no node: %+v", i-1, srv.Fault)
		}
	}
}
