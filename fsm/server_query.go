package fsm

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// ServerQuery selects and orders the servers of a list (Nova's GET
// /servers). A list of live servers reads only the live servers of the
// index it needs (server_index.go); deleted servers are read only when
// Deleted asks for them, and with Since only those updated since.
type ServerQuery struct {
	// Project selects the servers of one project (Server.Project; ""
	// every project's).
	Project string
	// Deleted adds the deleted servers retained until their purge.
	Deleted bool
	// Since, when not zero, selects the servers updated at or after it.
	Since time.Time
	// Keep, when set, selects further. It runs under the store's read
	// lock: it must not call the Store, and reads a server's ports
	// through net.
	Keep func(v *Server, net func(id string) ServerNet) bool
	// Order, when set, orders the list; it must be a total order (the
	// servers a marker equals in it are taken as before the marker).
	// Without it the list is in the order of the index: CreatedAt,
	// LaunchIndex, ID, newest first when Desc.
	Order func(a, b *Server) int
	Desc  bool
	// Marker starts the list after this server, which may be any server
	// the state holds (deleted, of another project, not selected).
	Marker string
	// Limit bounds the list (< 0: no bound).
	Limit int
}

// ListServers returns copies of the servers q selects, in its order, and
// whether more follow the limit. A Marker that names no server is an
// error wrapping ErrNotFound.
func (s *Store) ListServers(q ServerQuery) ([]Server, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	l := lister{st: s.st, q: q}
	if q.Marker != "" {
		m, ok := s.st.servers[q.Marker]
		if !ok {
			return nil, false, errServerNotFound(q.Marker)
		}
		l.marker = &m
	}
	l.net = func(id string) ServerNet { return l.st.nets[id].clone() }
	if q.Order != nil {
		return l.sorted()
	}
	return l.indexed()
}

// lister is one ListServers.
type lister struct {
	st     *state
	q      ServerQuery
	marker *Server
	net    func(id string) ServerNet
	out    []Server
	more   bool
}

// keep reports whether q selects v, a live server of the index walked or
// a deleted one.
func (l *lister) keep(v *Server) bool {
	q := &l.q
	switch {
	case q.Project != "" && v.Project() != q.Project:
		return false
	case !q.Since.IsZero() && v.UpdatedAt.Before(q.Since):
		return false
	}
	return q.Keep == nil || q.Keep(v, l.net)
}

// emit adds a copy of v to the list, or reports that the limit is
// reached (and that v is more).
func (l *lister) emit(v *Server) bool {
	if l.q.Limit >= 0 && len(l.out) >= l.q.Limit {
		l.more = true
		return false
	}
	l.out = append(l.out, cloneServer(*v))
	return true
}

// liveTree is the index of the live servers q reads.
func (l *lister) liveTree() interface {
	Len() int
	Scan(func(listKey) bool)
	Reverse(func(listKey) bool)
	Ascend(listKey, func(listKey) bool)
	Descend(listKey, func(listKey) bool)
} {
	if l.q.Project == "" {
		return l.st.idx.live
	}
	if t := l.st.idx.projects[l.q.Project]; t != nil {
		return t
	}
	return emptyTree{}
}

type emptyTree struct{}

func (emptyTree) Len() int                            { return 0 }
func (emptyTree) Scan(func(listKey) bool)             {}
func (emptyTree) Reverse(func(listKey) bool)          {}
func (emptyTree) Ascend(listKey, func(listKey) bool)  {}
func (emptyTree) Descend(listKey, func(listKey) bool) {}

// deleted calls visit with each deleted server q selects, updated at or
// after Since: the only deleted servers read.
func (l *lister) deleted(visit func(v *Server)) {
	each := func(k changeKey) bool {
		if v := l.st.servers[k.id]; l.keep(&v) {
			visit(&v)
		}
		return true
	}
	if l.q.Since.IsZero() {
		l.st.idx.deleted.Scan(each)
	} else {
		since := l.q.Since
		l.st.idx.deleted.Ascend(changeKey{sec: since.Unix(), nsec: int32(since.Nanosecond())}, each)
	}
}

// indexed lists in the index order: the live servers walked from the
// marker, merged with the deleted ones selected, until the limit.
func (l *lister) indexed() ([]Server, bool, error) {
	dir := 1
	if l.q.Desc {
		dir = -1
	}
	var mk listKey
	if l.marker != nil {
		mk = listKeyOf(l.marker)
	}
	after := func(k listKey) bool { return l.marker == nil || dir*compareListKeys(k, mk) > 0 }
	// The deleted servers selected, keys only, in the list's direction.
	var dels []listKey
	if l.q.Deleted {
		l.deleted(func(v *Server) {
			if k := listKeyOf(v); after(k) {
				dels = append(dels, k)
			}
		})
		slices.SortFunc(dels, func(a, b listKey) int { return dir * compareListKeys(a, b) })
	}
	emitKey := func(k listKey) bool {
		v := l.st.servers[k.id]
		return l.emit(&v)
	}
	done := false
	visit := func(k listKey) bool {
		if !after(k) {
			return true // the marker itself
		}
		for len(dels) > 0 && dir*compareListKeys(dels[0], k) < 0 {
			if !emitKey(dels[0]) {
				done = true
				return false
			}
			dels = dels[1:]
		}
		v := l.st.servers[k.id]
		if l.keep(&v) && !l.emit(&v) {
			done = true
			return false
		}
		return true
	}
	tree := l.liveTree()
	switch {
	case l.marker == nil && dir > 0:
		tree.Scan(visit)
	case l.marker == nil:
		tree.Reverse(visit)
	case dir > 0:
		tree.Ascend(mk, visit)
	default:
		tree.Descend(mk, visit)
	}
	for i := 0; !done && i < len(dels); i++ {
		done = !emitKey(dels[i])
	}
	return l.out, l.more, nil
}

// sorted lists in q.Order: the servers selected (the live ones, and the
// deleted ones only when asked for) sorted, then paged from the marker.
func (l *lister) sorted() ([]Server, bool, error) {
	tree := l.liveTree()
	all := make([]Server, 0, tree.Len())
	tree.Scan(func(k listKey) bool {
		if v := l.st.servers[k.id]; l.keep(&v) {
			all = append(all, v)
		}
		return true
	})
	if l.q.Deleted {
		l.deleted(func(v *Server) { all = append(all, *v) })
	}
	ptrs := make([]*Server, len(all))
	for i := range all {
		ptrs[i] = &all[i]
	}
	slices.SortStableFunc(ptrs, l.q.Order)
	start := 0
	if l.marker != nil {
		start = sort.Search(len(ptrs), func(i int) bool { return l.q.Order(l.marker, ptrs[i]) < 0 })
	}
	for _, v := range ptrs[start:] {
		if !l.emit(v) {
			break
		}
	}
	return l.out, l.more, nil
}

// LiveServers returns every live server, sorted by creation time, then
// ID (as Servers, without the deleted ones).
func (s *Store) LiveServers() []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, s.st.idx.live.Len())
	s.st.idx.live.Scan(func(k listKey) bool {
		out = append(out, cloneServer(s.st.servers[k.id]))
		return true
	})
	// The index orders the servers of one creation time by launch index
	// first: only those runs change.
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].CreatedAt.Equal(out[i].CreatedAt) {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(out[i:j], func(a, b Server) int { return strings.Compare(a.ID, b.ID) })
		}
		i = j
	}
	return out
}

// ServersEndedAfter returns the live servers and the deleted ones last
// updated (deleted) after t or at no known time (a zero UpdatedAt),
// sorted by creation time, then ID: the servers that may have run after
// t.
func (s *Store) ServersEndedAfter(t time.Time) []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, s.st.idx.live.Len())
	s.st.idx.live.Scan(func(k listKey) bool {
		out = append(out, cloneServer(s.st.servers[k.id]))
		return true
	})
	s.st.idx.deleted.Scan(func(k changeKey) bool { // the zero times sort first
		v := s.st.servers[k.id]
		if !v.UpdatedAt.IsZero() {
			return false
		}
		out = append(out, cloneServer(v))
		return true
	})
	s.st.idx.deleted.Ascend(changeKey{sec: t.Unix(), nsec: int32(t.Nanosecond())}, func(k changeKey) bool {
		if v := s.st.servers[k.id]; v.UpdatedAt.After(t) {
			out = append(out, cloneServer(v))
		}
		return true
	})
	sortByCreation(out)
	return out
}

// DeletedServers returns the deleted servers retained, sorted by creation
// time, then ID.
func (s *Store) DeletedServers() []Server {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Server, 0, s.st.idx.deleted.Len())
	s.st.idx.deleted.Scan(func(k changeKey) bool {
		out = append(out, cloneServer(s.st.servers[k.id]))
		return true
	})
	sortByCreation(out)
	return out
}

// ServerCounts returns the number of servers of every status.
func (s *Store) ServerCounts() map[ServerStatus]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[ServerStatus]int{StatusDeleted: s.st.idx.deleted.Len()}
	s.st.idx.live.Scan(func(k listKey) bool {
		out[s.st.servers[k.id].Status]++
		return true
	})
	return out
}

func sortByCreation(ss []Server) {
	slices.SortFunc(ss, func(a, b Server) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// eachOwned calls f with the ID of each live server of host ("" for
// those of no host), in ID order: the owners' index, not every server.
func (st *state) eachOwned(host string, f func(id string)) {
	if t := st.idx.hosts[host]; t != nil {
		t.Scan(func(id string) bool { f(id); return true })
	}
}

// liveIDs returns the IDs of the live servers, sorted.
func (st *state) liveIDs() []string {
	ids := make([]string, 0, st.idx.live.Len())
	st.idx.live.Scan(func(k listKey) bool {
		ids = append(ids, k.id)
		return true
	})
	slices.Sort(ids)
	return ids
}
