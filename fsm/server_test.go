package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func serverFixture(t *testing.T) *applier {
	a := newApplier(t)
	a.ok(&RegisterHost{Meta: at(0), Name: "h1", Kind: KindIronic})
	a.ok(&RegisterHost{Meta: at(0), Name: "h2", Kind: KindIronic})
	a.ok(&RegisterHost{Meta: at(0), Name: "hv", Kind: KindHypervisor})
	a.ok(&CreateFlavor{Meta: at(0), Flavor: testFlavor("gold", "bm-gold")})
	return a
}

// bareMetalFixture adds ten gold nodes and a bare-metal flavor "bm".
func bareMetalFixture(t *testing.T) *applier {
	a := serverFixture(t)
	var nodes []Node
	for i := 0; i < 10; i++ {
		nodes = append(nodes, Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i), ResourceClass: "baremetal-gold",
			ProvisionState: "available", PowerState: "power off",
			Properties: map[string]string{"cpus": "64", "memory_mb": "131072", "local_gb": "371"}})
	}
	a.ok(&SyncNodes{Meta: at(0), Upserts: nodes})
	f := testFlavor("bm", "bare-metal-gold")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
		"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	return a
}

func TestPrepareChoosesLeastLoadedIronicHost(t *testing.T) {
	a := bareMetalFixture(t)
	count := map[string]int{}
	for i := 0; i < 10; i++ {
		c := &CreateServer{Meta: at(i + 1), ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), Name: "s", FlavorID: "bm", ImageRef: "img"}
		a.s.Prepare(c)
		if c.Host == "hv" {
			t.Fatal("a bare-metal server was placed on a hypervisor host")
		}
		a.ok(c)
		count[c.Host]++
	}
	if count["h1"] != 5 || count["h2"] != 5 {
		t.Fatalf("placement not balanced: %v", count)
	}
}

func TestCreateServerRejectsDownHostAndRecordsNoHost(t *testing.T) {
	a := serverFixture(t)
	a.ok(&SetHostStatus{Meta: at(1), Name: "h1", Status: HostDown})
	r := a.apply(&CreateServer{Meta: at(2), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", Host: "h1"})
	if !errors.Is(r.Err, ErrConflict) {
		t.Fatalf("create on a down host: %v, want ErrConflict", r.Err)
	}
	a.ok(&SetHostStatus{Meta: at(1), Name: "h2", Status: HostDown})
	c := &CreateServer{Meta: at(3), ID: "s2", Name: "x", FlavorID: "gold", ImageRef: "i"}
	a.s.Prepare(c)
	srv := a.ok(c).(Server)
	if srv.Status != StatusError || srv.Fault == nil || srv.Host != "" {
		t.Fatalf("no-host server: %+v", srv)
	}
	c = &CreateServer{Meta: at(3), ID: "s2b", Name: "x", FlavorID: "gold", ImageRef: "i"}
	a.s.Prepare(c)
	srv = a.ok(c).(Server)
	if srv.Status != StatusError || srv.Fault == nil || srv.Host != "" {
		t.Fatalf("no-host server: %+v", srv)
	}
	if r := a.apply(&CreateServer{Meta: at(4), ID: "s3", Name: "x", FlavorID: "nope", ImageRef: "i"}); !errors.Is(r.Err, ErrInvalid) {
		t.Fatalf("unknown flavor: %v", r.Err)
	}
}

func TestEmbeddedFlavorSurvivesFlavorChanges(t *testing.T) {
	a := serverFixture(t)
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", Host: "h1"})
	a.ok(&SetFlavorExtraSpecs{Meta: at(2), ID: "gold", Specs: map[string]string{"k": "v"}})
	a.ok(&DeleteFlavor{Meta: at(3), ID: "gold"})
	s, _ := a.s.Server("s1")
	if s.Flavor.Name != "bm-gold" || len(s.Flavor.ExtraSpecs) != 0 {
		t.Fatalf("embedded flavor changed: %+v", s.Flavor)
	}
}

func TestReservationsOneToOneAndFenced(t *testing.T) {
	a := serverFixture(t)
	a.ok(&CreateServer{Meta: at(1), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i", Host: "h1"})
	a.ok(&CreateServer{Meta: at(1), ID: "s2", Name: "y", FlavorID: "gold", ImageRef: "i", Host: "h2"})
	a.ok(&ReserveNode{Meta: at(2), ServerID: "s1", Host: "h1", Epoch: 1, NodeUUID: "n1", AllocationUUID: "s1"})
	before := a.s.Digest()
	for _, c := range []Command{
		&ReserveNode{Meta: at(3), ServerID: "s2", Host: "h2", Epoch: 1, NodeUUID: "n1"},    // node taken
		&ReserveNode{Meta: at(3), ServerID: "s1", Host: "h1", Epoch: 1, NodeUUID: "n2"},    // server has a node
		&ReserveNode{Meta: at(3), ServerID: "s2", Host: "h1", Epoch: 1, NodeUUID: "n2"},    // not the owner
		&ReserveNode{Meta: at(3), ServerID: "s2", Host: "h2", Epoch: 7, NodeUUID: "n2"},    // stale epoch
		&SetServerTask{Meta: at(3), ID: "s1", Host: "h1", Epoch: 1, Status: StatusDeleted}, // still holds n1
		&SetServerTask{Meta: at(3), ID: "s2", Host: "h2", Epoch: 1, Status: StatusActive},  // no node
		&SetServerTask{Meta: at(3), ID: "s1", Host: "h2", Epoch: 1, Status: StatusActive},  // fenced
		&ReleaseNode{Meta: at(3), ServerID: "s1", Host: "h2", Epoch: 1, NodeUUID: "n1"},    // fenced
	} {
		if r := a.apply(c); r.Err == nil {
			t.Fatalf("%s %+v was accepted", c.Type(), c)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("rejected commands changed the state")
	}
	if r := a.apply(&SetServerTask{Meta: at(4), ID: "s1", Host: "h2", Epoch: 1}); !errors.Is(r.Err, ErrFenced) {
		t.Fatalf("want ErrFenced, got %v", r.Err)
	}
	a.ok(&SetServerTask{Meta: at(4), ID: "s1", Host: "h1", Epoch: 1, Status: StatusActive})
	if got := a.s.ReservedBy("n1"); got != "s1" {
		t.Fatalf("reservation of n1 = %q", got)
	}
	a.ok(&DeleteServer{Meta: at(5), ID: "s1"})
	a.ok(&ReleaseNode{Meta: at(6), ServerID: "s1", Host: "h1", Epoch: 1, NodeUUID: "n1"})
	a.ok(&ReleaseNode{Meta: at(6), ServerID: "s1", Host: "h1", Epoch: 1, NodeUUID: "n1"}) // idempotent
	a.ok(&SetServerTask{Meta: at(7), ID: "s1", Host: "h1", Epoch: 1, Status: StatusDeleted})
	a.ok(&ReserveNode{Meta: at(8), ServerID: "s2", Host: "h2", Epoch: 1, NodeUUID: "n1"})
	if len(a.s.Reservations()) != 1 || a.s.Reservations()[0].ServerID != "s2" {
		t.Fatalf("reservations %+v", a.s.Reservations())
	}
	if r := a.apply(&DeleteServer{Meta: at(9), ID: "s1"}); !errors.Is(r.Err, ErrNotFound) {
		t.Fatalf("deleting a deleted server: %v", r.Err)
	}
	// Reservations survive a snapshot round trip (rebuilt from servers).
	b := New()
	if err := b.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if b.ReservedBy("n1") != "s2" || b.Digest() != a.s.Digest() {
		t.Fatal("reservations lost in snapshot")
	}
}

func TestSyncNodesMarksMissingNeverDeletes(t *testing.T) {
	a := newApplier(t)
	a.ok(&SyncNodes{Meta: at(1), Upserts: []Node{{UUID: "n1", ProvisionState: "available", PowerState: "power off"}, {UUID: "n2"}}})
	a.ok(&SyncNodes{Meta: at(2), Missing: []string{"n2", "unknown"}})
	n2, err := a.s.Node("n2")
	if err != nil || !n2.Missing {
		t.Fatalf("n2 = %+v, %v", n2, err)
	}
	if len(a.s.Nodes()) != 2 {
		t.Fatal("a missing node was dropped")
	}
	a.ok(&SyncNodes{Meta: at(3), Upserts: []Node{{UUID: "n2", ProvisionState: "available", PowerState: "power off"}}})
	n2, _ = a.s.Node("n2")
	n1, _ := a.s.Node("n1")
	if n2.Missing || !n2.Available() || !n1.Available() || !n2.LastSeen.Equal(at(3).At) {
		t.Fatalf("nodes after reappearance: %+v %+v", n1, n2)
	}
}

func TestDeleteUnscheduledServerIsImmediate(t *testing.T) {
	a := serverFixture(t)
	a.ok(&SetHostStatus{Meta: at(1), Name: "h1", Status: HostDown})
	a.ok(&SetHostStatus{Meta: at(1), Name: "h2", Status: HostDown})
	c := &CreateServer{Meta: at(2), ID: "s1", Name: "x", FlavorID: "gold", ImageRef: "i"}
	a.s.Prepare(c)
	a.ok(c)
	s := a.ok(&DeleteServer{Meta: at(3), ID: "s1"}).(Server)
	if s.Status != StatusDeleted {
		t.Fatalf("unscheduled server after delete: %s", s.Status)
	}
}

func snapshotReader(t *testing.T, s *Store) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return &buf
}
