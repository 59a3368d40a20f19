package placement

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
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

// checkInvariants recomputes every derived structure from the primary
// state and compares.
func checkInvariants(t testing.TB, s *Store) {
	t.Helper()
	used := make(map[*slot]int64)
	projects := make(map[string]map[string]int64)
	for id, c := range s.consumers {
		if len(c.allocs) == 0 {
			t.Fatalf("consumer %s has no allocations", id)
		}
		for pu, res := range c.allocs {
			p := s.providers[pu]
			if p == nil || p.consumers[id] != c {
				t.Fatalf("consumer %s not linked from provider %s", id, pu)
			}
			for rc, n := range res {
				used[p.inv[rc]] += n
				if projects[c.project] == nil {
					projects[c.project] = map[string]int64{}
				}
				projects[c.project][rc] += n
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
		for rc, sl := range p.inv {
			if sl.used != used[sl] || sl.used > sl.cap || sl.cap != sl.inv.Capacity() {
				t.Fatalf("provider %s %s: used %d recomputed %d cap %d", uuid, rc, sl.used, used[sl], sl.cap)
			}
			count["rc:"+rc]++
		}
		for _, tr := range p.traits {
			count["t:"+tr]++
		}
		for _, a := range p.aggs {
			count["a:"+a]++
		}
		for id := range p.consumers {
			if s.consumers[id] == nil || s.consumers[id].allocs[uuid] == nil {
				t.Fatalf("provider %s links consumer %s without allocations", uuid, id)
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
	checkList := func(name string, l *plist, want int, has func(*provider) bool) {
		if l.len() != want {
			t.Fatalf("posting %s has %d entries, want %d", name, l.len(), want)
		}
		prev, n := "", 0
		l.each(func(p *provider) bool {
			n++
			if p.uuid <= prev || s.providers[p.uuid] != p || !has(p) {
				t.Fatalf("posting %s out of order or stale at %s", name, p.uuid)
			}
			prev = p.uuid
			return true
		})
		if n != want {
			t.Fatalf("posting %s iterates %d, want %d", name, n, want)
		}
	}
	checkList("all", &s.all, len(s.providers), func(*provider) bool { return true })
	for rc, l := range s.byRC {
		checkList("rc:"+rc, l, count["rc:"+rc], func(p *provider) bool { return p.inv[rc] != nil })
	}
	for tr, l := range s.byTrait {
		checkList("t:"+tr, l, count["t:"+tr], func(p *provider) bool { return p.hasTrait(tr) })
	}
	for a, l := range s.byAgg {
		checkList("a:"+a, l, count["a:"+a], func(p *provider) bool { return p.inAggregate(a) })
	}
	if len(s.byRC)+len(s.byTrait)+len(s.byAgg) != len(count) {
		t.Fatalf("posting maps hold %d keys, providers use %d", len(s.byRC)+len(s.byTrait)+len(s.byAgg), len(count))
	}
}
