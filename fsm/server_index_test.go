package fsm

import (
	"bytes"
	"cmp"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/btree"
)

func treeItems[T any](t *btree.BTreeG[T]) []T {
	var out []T
	if t != nil {
		t.Scan(func(k T) bool { out = append(out, k); return true })
	}
	return out
}

// checkServerIndex compares the maintained server indexes with the ones
// built from the servers, and checks their order against the servers'
// fields.
func checkServerIndex(t *testing.T, st *state) {
	t.Helper()
	if st.indexLater {
		t.Fatal("the server indexes are not built")
	}
	want := indexServers(st.servers)
	if got, w := treeItems(st.idx.live), treeItems(want.live); !slices.Equal(got, w) {
		t.Fatalf("live index %v, rebuilt %v", got, w)
	}
	if got, w := treeItems(st.idx.deleted), treeItems(want.deleted); !slices.Equal(got, w) {
		t.Fatalf("deleted index %v, rebuilt %v", got, w)
	}
	if got, w := slices.Sorted(maps.Keys(st.idx.projects)), slices.Sorted(maps.Keys(want.projects)); !slices.Equal(got, w) {
		t.Fatalf("projects indexed %v, rebuilt %v", got, w)
	}
	for p, tr := range st.idx.projects {
		if got, w := treeItems(tr), treeItems(want.projects[p]); !slices.Equal(got, w) {
			t.Fatalf("project %s index %v, rebuilt %v", p, got, w)
		}
	}
	if got, w := slices.Sorted(maps.Keys(st.idx.hosts)), slices.Sorted(maps.Keys(want.hosts)); !slices.Equal(got, w) {
		t.Fatalf("owners indexed %v, rebuilt %v", got, w)
	}
	for h, tr := range st.idx.hosts {
		if got, w := treeItems(tr), treeItems(want.hosts[h]); !slices.Equal(got, w) {
			t.Fatalf("owner %q index %v, rebuilt %v", h, got, w)
		}
	}
	live, deleted := 0, 0
	for _, s := range st.servers {
		if s.Live() {
			live++
		} else {
			deleted++
		}
	}
	if st.idx.live.Len() != live || st.idx.deleted.Len() != deleted {
		t.Fatalf("indexes hold %d live and %d deleted servers, the state %d and %d", st.idx.live.Len(), st.idx.deleted.Len(), live, deleted)
	}
}

// The reads that walk the indexes answer what the same reads over every
// server answered, after random sequences of commands (creates at one
// time, deletes, purges, owner changes).
func TestServerReadsMatchReference(t *testing.T) {
	seen := 0 // deleted servers
	for seed := uint64(1); seed <= 12; seed++ {
		a := hostCountFixture(t)
		for i := range 5 { // one creation time: ids decide
			a.ok(&CreateServer{Meta: at(5), ID: sid(90 - i), Name: "s", FlavorID: "bm", ImageRef: "img", Host: "h1"})
		}
		r := rand.New(rand.NewPCG(seed, 9))
		runRandomCommands(t, a, r, 50+int(seed)*20)
		for i := range 12 { // servers no host took, deleted at once
			a.ok(&CreateServer{Meta: at(100 + r.IntN(300)), ID: sid(100 + i), Name: "s", FlavorID: "bm", ImageRef: "img"})
			if i%3 > 0 {
				a.ok(&DeleteServer{Meta: at(100 + r.IntN(400)), ID: sid(100 + i)})
			}
		}
		all := a.s.Servers()
		ids := func(ss []Server) []string {
			out := []string{}
			for _, s := range ss {
				out = append(out, s.ID)
			}
			return out
		}
		where := func(f func(Server) bool) []Server {
			return slices.DeleteFunc(slices.Clone(all), func(s Server) bool { return !f(s) })
		}
		if got, want := a.s.LiveServers(), where(Server.Live); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: LiveServers %v, want %v", seed, ids(got), ids(want))
		}
		deleted := where(func(s Server) bool { return !s.Live() })
		if got := a.s.DeletedServers(); !reflect.DeepEqual(got, deleted) {
			t.Fatalf("seed %d: DeletedServers %v, want %v", seed, ids(got), ids(deleted))
		}
		seen += len(deleted)
		for sec := 90; sec <= 420; sec += 30 {
			tm := at(sec).At
			want := where(func(s Server) bool { return s.Live() || s.UpdatedAt.IsZero() || s.UpdatedAt.After(tm) })
			if got := a.s.ServersEndedAfter(tm); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: ServersEndedAfter(%v) %v, want %v", seed, tm, ids(got), ids(want))
			}
			for _, max := range []int{0, 1, 3} {
				due := where(func(s Server) bool { return purgeable(s, tm) })
				slices.SortFunc(due, func(a, b Server) int {
					return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), strings.Compare(a.ID, b.ID))
				})
				if max > 0 && len(due) > max {
					due = due[:max]
				}
				if got := a.s.DeletedBefore(tm, max); !slices.Equal(got, ids(due)) {
					t.Fatalf("seed %d: DeletedBefore(%v, %d) %v, want %v", seed, tm, max, got, ids(due))
				}
			}
		}
		counts := map[ServerStatus]int{StatusDeleted: 0}
		for _, s := range all {
			counts[s.Status]++
		}
		if got := a.s.ServerCounts(); !maps.Equal(got, counts) {
			t.Fatalf("seed %d: ServerCounts %v, want %v", seed, got, counts)
		}
		for _, h := range []string{"h1", "h2", "h3", ""} {
			owned := where(func(s Server) bool { return s.Live() && s.Host == h })
			slices.SortFunc(owned, func(a, b Server) int { return strings.Compare(a.ID, b.ID) })
			if got := a.s.OwnedBy(h); !reflect.DeepEqual(got, owned) && len(got)+len(owned) > 0 {
				t.Fatalf("seed %d: OwnedBy(%s) %v, want %v", seed, h, ids(got), ids(owned))
			}
			var own []string
			for _, o := range a.s.Owned(h) {
				own = append(own, o.ID)
			}
			if !slices.Equal(own, ids(owned)) && len(own)+len(owned) > 0 {
				t.Fatalf("seed %d: Owned(%s) %v, want %v", seed, h, own, ids(owned))
			}
		}
	}
	if seen < 10 {
		t.Fatalf("%d deleted servers in all: the sequences tested too few", seen)
	}
}

// A restore builds the indexes in the order of the servers' fields
// whatever the order of their records: a snapshot holds them by ID, and a
// stream that does not is indexed all the same.
func TestRestoredIndexesAnyRecordOrder(t *testing.T) {
	t1 := at(1).At
	var servers []Server
	for i, id := range []string{"s-d", "s-c", "s-b", "s-a", "s-e"} {
		s := Server{ID: id, Name: id, Status: StatusError, Flavor: testFlavor("bm", "bm"), ImageRef: "img",
			CreatedAt: t1, UpdatedAt: t1, LaunchIndex: i % 2, ProjectID: []string{"p1", ""}[i%2]}
		if i >= 3 {
			s.Status, s.UpdatedAt = StatusDeleted, at(5-i).At
		}
		servers = append(servers, s)
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {3, 2, 1, 0, 4}, {4, 3, 2, 1, 0}} {
		var recs [][]byte
		for _, i := range order {
			recs = append(recs, record(RecordServer, string(appendServer(nil, &servers[i], snapshotVersionFields))))
		}
		s := New()
		if err := s.Restore(bytes.NewReader(stream(snapshotVersionFields, 1, recs...))); err != nil {
			t.Fatal(err)
		}
		s.mu.RLock()
		checkServerIndex(t, s.st)
		s.mu.RUnlock()
		if got := treeItems(s.st.idx.live); len(got) != 3 || got[0].id != "s-b" || got[1].id != "s-d" || got[2].id != "s-c" {
			t.Fatalf("records in order %v: live index %v", order, got)
		}
	}
}
