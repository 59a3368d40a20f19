package fsm

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/btree"
)

// The server indexes: the live servers in the order a server list shows
// them by default, all of them and each project's apart, and the deleted
// servers retained until their purge, in the order they were last
// updated. Lists page from them (server_query.go) instead of sorting
// every server the state holds: a list of live servers does not read the
// deleted ones, and a read of what changed since a time reads only the
// deleted servers changed since then.
//
// They are derived state: putServer and removeServer keep them, a
// restore rebuilds them from the servers (buildServerIndex), and neither
// snapshots nor the digest see them. Their order is a total order of
// values (no map order), so every peer holds the same indexes.

// listKey orders the live servers: CreatedAt, LaunchIndex, ID.
type listKey struct {
	sec  int64 // CreatedAt in Unix seconds and nanoseconds
	nsec int32
	li   int32 // LaunchIndex (below MaxSetServers)
	id   string
}

func listKeyOf(s *Server) listKey {
	li := s.LaunchIndex
	if li > math.MaxInt32 || li < math.MinInt32 {
		li = cmp.Compare(li, 0) * math.MaxInt32 // out of any real range: the ends
	}
	return listKey{sec: s.CreatedAt.Unix(), nsec: int32(s.CreatedAt.Nanosecond()), li: int32(li), id: s.ID}
}

func compareListKeys(a, b listKey) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec), cmp.Compare(a.li, b.li), strings.Compare(a.id, b.id))
}

func lessListKey(a, b listKey) bool { return compareListKeys(a, b) < 0 }

// changeKey orders the deleted servers: UpdatedAt, ID.
type changeKey struct {
	sec  int64
	nsec int32
	id   string
}

func changeKeyOf(s *Server) changeKey {
	return changeKey{sec: s.UpdatedAt.Unix(), nsec: int32(s.UpdatedAt.Nanosecond()), id: s.ID}
}

func compareChangeKeys(a, b changeKey) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec), strings.Compare(a.id, b.id))
}

func lessChangeKey(a, b changeKey) bool { return compareChangeKeys(a, b) < 0 }

// treeOptions: the store's lock guards the trees.
var treeOptions = btree.Options{NoLocks: true}

// serverIndex holds the indexes of the servers of a state.
type serverIndex struct {
	live     *btree.BTreeG[listKey]            // every live server
	projects map[string]*btree.BTreeG[listKey] // the live servers of each project (Server.Project), no empty tree
	deleted  *btree.BTreeG[changeKey]          // every deleted server
	// hosts: the IDs of the live servers of each owner (Server.Host, ""
	// for none), in ID order, no empty tree. An owner's manager reads
	// its servers after every burst of entries (Store.Owned) and a
	// reassignment plans the servers of one host: both walk that host's
	// servers alone, already in order.
	hosts map[string]*btree.BTreeG[string]
}

func newServerIndex() serverIndex {
	return serverIndex{live: btree.NewBTreeGOptions(lessListKey, treeOptions),
		projects: map[string]*btree.BTreeG[listKey]{},
		deleted:  btree.NewBTreeGOptions(lessChangeKey, treeOptions),
		hosts:    map[string]*btree.BTreeG[string]{}}
}

func lessID(a, b string) bool { return a < b }

// host returns the tree of h's live servers, creating it.
func (x *serverIndex) host(h string) *btree.BTreeG[string] {
	t := x.hosts[h]
	if t == nil {
		t = btree.NewBTreeGOptions(lessID, treeOptions)
		x.hosts[h] = t
	}
	return t
}

// project returns the tree of project's live servers, creating it.
func (x *serverIndex) project(p string) *btree.BTreeG[listKey] {
	t := x.projects[p]
	if t == nil {
		t = btree.NewBTreeGOptions(lessListKey, treeOptions)
		x.projects[p] = t
	}
	return t
}

func (x *serverIndex) add(s *Server) {
	if !s.Live() {
		x.deleted.Set(changeKeyOf(s))
		return
	}
	k := listKeyOf(s)
	x.live.Set(k)
	x.project(s.Project()).Set(k)
	x.host(s.Host).Set(s.ID)
}

func (x *serverIndex) remove(s *Server) {
	if !s.Live() {
		x.deleted.Delete(changeKeyOf(s))
		return
	}
	k := listKeyOf(s)
	x.live.Delete(k)
	p := s.Project()
	if t := x.projects[p]; t != nil {
		if t.Delete(k); t.Len() == 0 {
			delete(x.projects, p)
		}
	}
	if t := x.hosts[s.Host]; t != nil {
		if t.Delete(s.ID); t.Len() == 0 {
			delete(x.hosts, s.Host)
		}
	}
}

// sameIndexKeys reports whether a and b stand at the same place in the
// indexes: a change of status or task leaves a live server where it is.
func sameIndexKeys(a, b *Server) bool {
	if a.Live() != b.Live() {
		return false
	}
	if !a.Live() {
		return changeKeyOf(a) == changeKeyOf(b)
	}
	return listKeyOf(a) == listKeyOf(b) && a.Project() == b.Project() && a.Host == b.Host
}

// reindexServer moves s in the indexes from where old (when had) stood;
// during a restore it notes s for the indexes built once every server is
// loaded.
func (st *state) reindexServer(old *Server, had bool, s *Server) {
	if st.indexLater {
		st.loaded.add(s)
		return
	}
	if had && sameIndexKeys(old, s) {
		return
	}
	if had {
		st.idx.remove(old)
	}
	st.idx.add(s)
}

// unindexServer takes old out of the indexes.
func (st *state) unindexServer(old *Server) {
	if !st.indexLater {
		st.idx.remove(old)
	}
}

// buildServerIndex builds the indexes of the servers a restore loaded.
func (st *state) buildServerIndex() {
	st.idx, st.indexLater = st.loaded.index(), false
	st.loaded = indexBuild{}
}

// indexServers returns the indexes of servers.
func indexServers(servers map[string]Server) serverIndex {
	var b indexBuild
	for _, s := range servers { // any order: sorted by the build
		b.add(&s)
	}
	return b.index()
}

// indexBuild collects the keys of servers to build their indexes at once:
// the keys sorted, then loaded in order, which the trees take at the cost
// of an append.
type indexBuild struct {
	live    []liveEntry
	deleted []deletedEntry
	// ordered: the servers came in ascending ID order, as a snapshot
	// holds them; their arrival then sorts ties of time as their IDs
	// would, without comparing IDs (which share long prefixes). Either
	// way the trees place every key by its own order: the sort only
	// makes loading them an append.
	ordered bool
	last    string
}

type liveEntry struct {
	k   listKey
	p   string // Server.Project
	h   string // Server.Host
	seq int    // arrival
}

type deletedEntry struct {
	k   changeKey
	seq int
}

func (b *indexBuild) add(s *Server) {
	n := len(b.live) + len(b.deleted)
	if n == 0 {
		b.ordered = true
	} else if s.ID <= b.last {
		b.ordered = false
	}
	b.last = s.ID
	if s.Live() {
		b.live = append(b.live, liveEntry{k: listKeyOf(s), p: s.Project(), h: s.Host, seq: n})
	} else {
		b.deleted = append(b.deleted, deletedEntry{k: changeKeyOf(s), seq: n})
	}
}

func (b *indexBuild) index() serverIndex {
	live, deleted := b.live, b.deleted
	liveCmp := func(x, y liveEntry) int { return compareListKeys(x.k, y.k) }
	delCmp := func(x, y deletedEntry) int { return compareChangeKeys(x.k, y.k) }
	if b.ordered {
		liveCmp = func(x, y liveEntry) int {
			return cmp.Or(cmp.Compare(x.k.sec, y.k.sec), cmp.Compare(x.k.nsec, y.k.nsec), cmp.Compare(x.k.li, y.k.li), cmp.Compare(x.seq, y.seq))
		}
		delCmp = func(x, y deletedEntry) int {
			return cmp.Or(cmp.Compare(x.k.sec, y.k.sec), cmp.Compare(x.k.nsec, y.k.nsec), cmp.Compare(x.seq, y.seq))
		}
	}
	x := newServerIndex()
	// The owners' trees first, while live is in arrival order: ID order
	// when ordered, which Load appends (it places any other key as Set).
	for _, e := range live {
		x.host(e.h).Load(e.k.id)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		slices.SortFunc(deleted, delCmp)
		for _, e := range deleted {
			x.deleted.Load(e.k)
		}
	})
	slices.SortFunc(live, liveCmp)
	for _, e := range live {
		x.live.Load(e.k)
		x.project(e.p).Load(e.k)
	}
	wg.Wait()
	return x
}
