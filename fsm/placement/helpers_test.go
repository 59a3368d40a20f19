package placement

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// uid returns a deterministic canonical UUID for n in the given space
// (0 providers, 1 consumers, 2 aggregates).
func uid(space, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", space, n)
}

func rp(n int) string  { return uid(0, n) }
func cid(n int) string { return uid(1, n) }
func agg(n int) string { return uid(2, n) }

// mustCreate creates provider n named "rp-n" with the given inventories.
func mustCreate(t testing.TB, s *Store, n int, parent string, inv map[string]Inventory, traits ...string) Provider {
	t.Helper()
	p, err := s.CreateProvider(Provider{UUID: rp(n), Name: fmt.Sprintf("rp-%d", n), ParentUUID: parent,
		Inventories: inv, Traits: traits})
	if err != nil {
		t.Fatalf("create provider %d: %v", n, err)
	}
	return p
}

func gen(t testing.TB, s *Store, uuid string) uint64 {
	t.Helper()
	p, err := s.Provider(uuid)
	if err != nil {
		t.Fatal(err)
	}
	return p.Generation
}

func vmInv(vcpu, mem, disk int64) map[string]Inventory {
	return map[string]Inventory{
		"VCPU":      {Total: vcpu},
		"MEMORY_MB": {Total: mem},
		"DISK_GB":   {Total: disk},
	}
}

func alloc(project string, g *uint64, byRP map[string]map[string]int64) ConsumerAllocations {
	return ConsumerAllocations{ConsumerGeneration: g, ProjectID: project, UserID: "user", Allocations: byRP}
}

func wantErr(t testing.TB, err, kind error, contains ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want %v", err, kind)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not mention %q", err, c)
		}
	}
}

func encode(t testing.TB, s *Store) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (p *provider) hasTrait(t string) bool {
	_, ok := slices.BinarySearch(p.traits, t)
	return ok
}

func (p *provider) inAggregate(a string) bool {
	_, ok := slices.BinarySearch(p.aggs, a)
	return ok
}

// checkInvariants recomputes every derived structure from the primary
// state and compares.
func checkInvariants(t testing.TB, s *Store) {
	t.Helper()
	used := make(map[string]int64) // provider/class → usage
	projects := make(map[string]map[string]int64)
	for id, c := range s.consumers {
		if len(c.allocs) == 0 || c.id != id {
			t.Fatalf("consumer %s is empty or misfiled", id)
		}
		for i, h := range c.allocs {
			if i > 0 && c.allocs[i-1].p.uuid >= h.p.uuid {
				t.Fatalf("consumer %s holdings out of order", id)
			}
			if s.providers[h.p.uuid] != h.p || !slices.Contains(h.p.consumers, c) {
				t.Fatalf("consumer %s not linked from provider %s", id, h.p.uuid)
			}
			if len(h.res) == 0 {
				t.Fatalf("consumer %s holds nothing on %s", id, h.p.uuid)
			}
			for j, r := range h.res {
				if j > 0 && h.res[j-1].rc >= r.rc {
					t.Fatalf("consumer %s classes out of order", id)
				}
				used[h.p.uuid+"/"+r.rc] += r.n
				if projects[c.project] == nil {
					projects[c.project] = map[string]int64{}
				}
				projects[c.project][r.rc] += r.n
			}
		}
	}
	if !maps.EqualFunc(projects, s.projects, maps.Equal) {
		t.Fatalf("project usages %v, recomputed %v", s.projects, projects)
	}
	count := map[string]int{}
	for uuid, p := range s.providers {
		if s.byName[p.name] != p {
			t.Fatalf("name index broken for %s", uuid)
		}
		for i, sl := range p.inv {
			rc := sl.rc
			if i > 0 && p.inv[i-1].rc >= rc {
				t.Fatalf("provider %s inventories out of order", uuid)
			}
			if u := used[uuid+"/"+rc]; sl.used != u || sl.used > sl.cap || sl.cap != sl.inv.Capacity() {
				t.Fatalf("provider %s %s: used %d recomputed %d cap %d", uuid, rc, sl.used, u, sl.cap)
			}
			count["rc:"+rc]++
		}
		for _, tr := range p.traits {
			count["t:"+tr]++
		}
		for _, a := range p.aggs {
			count["a:"+a]++
		}
		for i, c := range p.consumers {
			if i > 0 && p.consumers[i-1].id >= c.id {
				t.Fatalf("provider %s consumers out of order", uuid)
			}
			if s.consumers[c.id] != c || c.holding(p) == nil {
				t.Fatalf("provider %s links consumer %s without allocations", uuid, c.id)
			}
		}
		if p.parent != nil && p.parent.children[uuid] != p {
			t.Fatalf("provider %s missing from its parent's children", uuid)
		}
		for cu, c := range p.children {
			if c.parent != p || s.providers[cu] != c {
				t.Fatalf("child link %s → %s broken", uuid, cu)
			}
		}
	}
	checkPosting := func(name string, p *posting, want int, has func(*provider) bool) {
		n := 0
		bitmap(p.words).each(func(i int32) {
			n++
			if int(i) >= len(s.slots) || s.slots[i] == nil || !has(s.slots[i]) {
				t.Fatalf("posting %s holds stale slot %d", name, i)
			}
		})
		if n != want || p.n != want {
			t.Fatalf("posting %s has %d (counted %d), want %d", name, p.n, n, want)
		}
	}
	checkPosting("live", &s.live, len(s.providers), func(*provider) bool { return true })
	live := 0
	for i, p := range s.slots {
		if p == nil {
			continue
		}
		live++
		if p.idx != int32(i) || s.providers[p.uuid] != p || s.ids[i] != keyOf(p.uuid) {
			t.Fatalf("slot %d broken", i)
		}
		for _, sl := range p.inv {
			rc := sl.rc
			if (sl.used < sl.cap) != (s.byFree[rc] != nil && s.byFree[rc].has(p.idx)) {
				t.Fatalf("free posting of %s wrong for %s", rc, p.uuid)
			}
			if sl.used < sl.cap {
				count["f:"+rc]++
			}
		}
	}
	if live != len(s.providers) || live+len(s.free) != len(s.slots) {
		t.Fatalf("%d live slots, %d free, %d slots, %d providers", live, len(s.free), len(s.slots), len(s.providers))
	}
	for rc, p := range s.byRC {
		checkPosting("rc:"+rc, p, count["rc:"+rc], func(p *provider) bool { return p.slot(rc) != nil })
	}
	for rc, p := range s.byFree {
		checkPosting("f:"+rc, p, count["f:"+rc], func(p *provider) bool { return p.slot(rc) != nil })
	}
	for tr, p := range s.byTrait {
		checkPosting("t:"+tr, p, count["t:"+tr], func(p *provider) bool { return p.hasTrait(tr) })
	}
	for a, p := range s.byAgg {
		checkPosting("a:"+a, p, count["a:"+a], func(p *provider) bool { return p.inAggregate(a) })
	}
	if n := len(s.byRC) + len(s.byFree) + len(s.byTrait) + len(s.byAgg); n != len(count) {
		t.Fatalf("posting maps hold %d keys, providers use %d", n, len(count))
	}
}
