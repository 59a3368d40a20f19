package fsm

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// same reports whether two maps or slices are one value in memory.
func same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return !va.IsNil() && va.UnsafePointer() == vb.UnsafePointer()
}

// Nodes of the same hardware hold one copy of their properties,
// capabilities and traits, in the applied state and in a restored one;
// the values are those the nodes were synced with, nil and empty kept
// apart, and what the Store hands out stays a copy.
func TestNodesShareEqualValues(t *testing.T) {
	a := newApplier(t)
	props := func() map[string]string {
		return map[string]string{"cpus": "8", "memory_mb": "16384", "local_gb": "100", "cpu_arch": "x86_64"}
	}
	node := func(i int) Node {
		return Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("n-%d", i),
			ResourceClass: "gold", ProvisionState: "available", PowerState: "power off", Properties: props(),
			Capabilities: map[string]string{"boot_mode": "uefi"}, Traits: []string{"CUSTOM_B", "CUSTOM_A"}}
	}
	n0, n1, n2, n3 := node(0), node(1), node(2), node(3)
	n1.Traits = []string{"CUSTOM_A", "CUSTOM_B"}
	n2.Properties["cpus"] = "16"
	n3.Properties, n3.Capabilities, n3.Traits = nil, map[string]string{}, []string{}
	a.ok(&SyncNodes{Meta: at(1), Upserts: []Node{n0, n1, n2, n3}})

	check := func(s *Store, what string) {
		t.Helper()
		st := s.st
		m0, m1, m2, m3 := st.nodes[n0.UUID], st.nodes[n1.UUID], st.nodes[n2.UUID], st.nodes[n3.UUID]
		if !same(m0.Properties, m1.Properties) || !same(m0.Capabilities, m1.Capabilities) || !same(m0.Traits, m1.Traits) {
			t.Errorf("%s: nodes of the same hardware hold copies of their properties, capabilities or traits", what)
		}
		if same(m0.Properties, m2.Properties) || !same(m0.Capabilities, m2.Capabilities) {
			t.Errorf("%s: sharing ignores the difference in properties, or misses the equal capabilities", what)
		}
		want := map[string]Node{n0.UUID: n0, n1.UUID: n1, n2.UUID: n2}
		for id, w := range want {
			got, err := s.Node(id)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Properties, w.Properties) || !maps.Equal(got.Capabilities, w.Capabilities) ||
				!slices.Equal(got.Traits, []string{"CUSTOM_A", "CUSTOM_B"}) {
				t.Errorf("%s: node %s is %v %v %v, synced with %v %v %v", what, id, got.Properties, got.Capabilities, got.Traits,
					w.Properties, w.Capabilities, w.Traits)
			}
		}
		if len(m3.Properties)+len(m3.Capabilities)+len(m3.Traits) != 0 {
			t.Errorf("%s: empty values are not: %#v %#v %#v", what, m3.Properties, m3.Capabilities, m3.Traits)
		}
		// A copy handed out may be changed without touching the others.
		got, _ := s.Node(n0.UUID)
		got.Properties["cpus"], got.Capabilities["boot_mode"], got.Traits[0] = "1", "bios", "CUSTOM_Z"
		if again, _ := s.Node(n1.UUID); again.Properties["cpus"] != "8" || again.Capabilities["boot_mode"] != "uefi" ||
			again.Traits[0] != "CUSTOM_A" {
			t.Errorf("%s: changing a node handed out changed another node: %v", what, again)
		}
	}
	check(a.s, "applied")

	// The command's values are not kept: changing them after Apply (the
	// leader applies the very value it proposed) changes nothing.
	sh := newSharer()
	in := node(7)
	kept := sh.node(in)
	in.Properties["cpus"], in.Traits[0] = "99", "CUSTOM_Z"
	if kept.Properties["cpus"] != "8" || !slices.Equal(kept.Traits, []string{"CUSTOM_A", "CUSTOM_B"}) {
		t.Fatalf("the state keeps the command's maps or lists: %v %v", kept.Properties, kept.Traits)
	}
	// nil and empty stay apart (a node applied from a JSON entry has nil
	// for both; one applied from msgpack keeps them).
	if e := sh.node(n3); e.Properties != nil || e.Capabilities == nil || len(e.Capabilities) != 0 || e.Traits == nil || len(e.Traits) != 0 {
		t.Fatalf("nil and empty values changed: %#v %#v %#v", e.Properties, e.Capabilities, e.Traits)
	}

	r := New()
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, a.s))); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() {
		t.Fatal("the restored state differs from the applied one")
	}
	check(r, "restored")
}

// Servers of one flavor share its extra specs and access list, and their
// claimed resources once restored; the flavor migration, which changes a
// server's extra specs, changes those of that server only.
func TestServersShareFlavorValues(t *testing.T) {
	a := bareMetalFixture(t)
	on := true
	a.ok(&SyncNodes{Meta: at(1), LegacyInventory: &on})
	old := testFlavor("old", "bm-old")
	old.VCPUs, old.RAM, old.Disk = 64, 131072, 371
	old.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}
	a.ok(&CreateFlavor{Meta: at(1), Flavor: old})
	s1, s2 := a.boot(sid(1), "old"), a.boot(sid(2), "old")
	if s1.Host == "" || s2.Host == "" {
		t.Fatal("the fixture's servers were not scheduled")
	}
	st := a.s.st
	if !same(st.servers[s1.ID].Flavor.ExtraSpecs, st.servers[s2.ID].Flavor.ExtraSpecs) {
		t.Error("servers of one flavor hold copies of its extra specs")
	}
	r := New()
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, a.s))); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() {
		t.Fatal("the restored state differs from the applied one")
	}
	r1, r2 := r.st.servers[s1.ID], r.st.servers[s2.ID]
	if !same(r1.Flavor.ExtraSpecs, r2.Flavor.ExtraSpecs) || !same(r1.Claim[r1.ClaimedNode], r2.Claim[r2.ClaimedNode]) {
		t.Error("restored servers of one flavor hold copies of its extra specs or of their claimed resources")
	}

	for _, s := range []*Store{a.s, r} {
		idx := s.AppliedIndex()
		if res := s.Apply(idx+1, mustEncode(t, &MigrateFlavors{Meta: at(20), ResourceClass: "CUSTOM_BAREMETAL_GOLD", ServerIDs: []string{s1.ID}})); res.Err != nil {
			t.Fatal(res.Err)
		}
		m1, _ := s.Server(s1.ID)
		m2, _ := s.Server(s2.ID)
		f, _ := s.Flavor("old")
		if !m1.Migrated("CUSTOM_BAREMETAL_GOLD") || m2.Migrated("CUSTOM_BAREMETAL_GOLD") ||
			!maps.Equal(m2.Flavor.ExtraSpecs, old.ExtraSpecs) || !maps.Equal(f.ExtraSpecs, old.ExtraSpecs) {
			t.Fatalf("migrating one server changed another or the flavor: %v / %v / %v", m1.Flavor.ExtraSpecs,
				m2.Flavor.ExtraSpecs, f.ExtraSpecs)
		}
	}
}

// A sharer's tables start over when full: values met after that are
// still the values given.
func TestSharerTablesAreBounded(t *testing.T) {
	sh := newSharer()
	for i := range 3 * maxShared {
		m := map[string]string{"i": fmt.Sprint(i)}
		l := []string{fmt.Sprint(i)}
		s := fmt.Sprint("s", i)
		if got := sh.strMap(m); !maps.Equal(got, m) || same(got, m) {
			t.Fatalf("map %d: got %v", i, got)
		}
		if got := sh.list(l); !slices.Equal(got, l) || same(got, l) {
			t.Fatalf("list %d: got %v", i, got)
		}
		if got := sh.str(s); got != s {
			t.Fatalf("string %d: got %q", i, got)
		}
		if len(sh.maps) > maxShared || len(sh.lists) > maxShared || len(sh.strs) > maxShared {
			t.Fatalf("after %d values the tables hold %d maps, %d lists, %d strings", i+1, len(sh.maps), len(sh.lists), len(sh.strs))
		}
	}
}

// A restore of more records than its loaders' batches hold at once (the
// batches are reused as the stream is read) restores every value as it
// was, though the values keep parts of the batches' records.
func TestRestoreOfManyBatchesKeepsEveryValue(t *testing.T) {
	a := newApplier(t)
	const n = 12_000 // about 2 MB of node records: eight batches
	var batch []Node
	for i := range n {
		batch = append(batch, Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("node-%d", i),
			ResourceClass: "gold", ProvisionState: "available", PowerState: "power off",
			Properties: map[string]string{"cpus": fmt.Sprint(i % 7), "serial": fmt.Sprintf("SN%08d", i)},
			Traits:     []string{fmt.Sprintf("CUSTOM_RACK_%d", i%13)}})
		if len(batch) == 500 {
			a.ok(&SyncNodes{Meta: at(1), Upserts: batch})
			batch = nil
		}
	}
	data := snapshotBytes(t, a.s)
	r := New()
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	want, got := a.s.Nodes(), r.Nodes()
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if i >= len(got) || !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("node %d restored as %+v, want %+v", i, got[min(i, len(got)-1)], want[i])
			}
		}
		t.Fatalf("%d nodes restored, want %d", len(got), len(want))
	}
	if !bytes.Equal(snapshotBytes(t, r), data) {
		t.Fatal("the restored store's snapshot differs from the one it was restored from")
	}
}
