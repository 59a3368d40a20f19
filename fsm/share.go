package fsm

import "slices"

// sharer makes equal values held by many records of the state one copy:
// the small maps and lists that nodes of the same hardware, or servers of
// the same flavor, hold alike (a node's properties, capabilities and
// traits; a server's flavor extra specs and claimed resources), and the
// short strings they repeat (resource class, provision and power
// states). 10^5 nodes then hold a handful of property maps instead of
// 10^5, a third of what the node mirror cost.
//
// Sharing changes no value, and the state never changes these maps or
// lists in place: Apply replaces a record whole, and the Store hands out
// copies (cloneNode, cloneServer). Equal values are found by their
// encoding in snapshot records (appendStrMap, appendStrs, the resources of
// appendClaim), which a restore reads straight from the record. Each
// table is emptied when it reaches maxShared entries, so that values no
// record holds any more are not kept for long; a value met after that is
// shared again from its next copy on.
//
// A sharer is not safe for concurrent use: the state's serves Apply
// (under the store's lock), and each record loader of a restore has its
// own.
type sharer struct {
	strs   map[string]string
	maps   map[string]map[string]string
	lists  map[string][]string
	counts map[string]map[string]int64
	empty  map[string]string // the shared empty, non-nil map
	buf    []byte
}

// maxShared bounds each table of a sharer.
const maxShared = 4096

// maxSharedStr is the longest string shared: longer ones are rarely
// repeated (names, UUIDs, messages).
const maxSharedStr = 64

func newSharer() *sharer {
	return &sharer{strs: map[string]string{}, maps: map[string]map[string]string{},
		lists: map[string][]string{}, counts: map[string]map[string]int64{}, empty: map[string]string{}}
}

// str returns the shared copy of s.
func (sh *sharer) str(s string) string {
	if s == "" || len(s) > maxSharedStr {
		return s
	}
	if v, ok := sh.strs[s]; ok {
		return v
	}
	if len(sh.strs) >= maxShared {
		clear(sh.strs)
	}
	sh.strs[s] = s
	return s
}

// strMap returns a map equal to m that the state may keep: the shared
// one, or a copy of m (never m itself, which the caller may still hold).
// nil stays nil, and an empty map stays empty, not nil.
func (sh *sharer) strMap(m map[string]string) map[string]string {
	switch {
	case m == nil:
		return nil
	case len(m) == 0:
		return sh.empty
	}
	sh.buf = appendStrMap(sh.buf[:0], m)
	if v, ok := sh.maps[string(sh.buf)]; ok {
		return v
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[sh.str(k)] = sh.str(v)
	}
	sh.putMap(string(sh.buf), c)
	return c
}

func (sh *sharer) putMap(key string, m map[string]string) {
	if len(sh.maps) >= maxShared {
		clear(sh.maps)
	}
	sh.maps[key] = m
}

// sortedList returns a sorted list equal to the sorted l that the state
// may keep, as list does (l is not changed).
func (sh *sharer) sortedList(l []string) []string {
	if !slices.IsSorted(l) {
		l = slices.Sorted(slices.Values(l))
	}
	return sh.list(l)
}

// list returns a list equal to l that the state may keep: the shared
// one, or a copy of l. nil stays nil, and an empty list stays empty.
func (sh *sharer) list(l []string) []string {
	if len(l) == 0 {
		return l[:0:0]
	}
	sh.buf = appendStrs(sh.buf[:0], l)
	if v, ok := sh.lists[string(sh.buf)]; ok {
		return v
	}
	c := make([]string, len(l))
	for i, s := range l {
		c[i] = sh.str(s)
	}
	sh.putList(string(sh.buf), c)
	return c
}

func (sh *sharer) putList(key string, l []string) {
	if len(sh.lists) >= maxShared {
		clear(sh.lists)
	}
	sh.lists[key] = l
}

func (sh *sharer) putCounts(key string, m map[string]int64) {
	if len(sh.counts) >= maxShared {
		clear(sh.counts)
	}
	sh.counts[key] = m
}

// node returns n with its maps and traits (sorted) replaced by copies the
// state may keep, shared with the nodes that hold equal ones, as are its
// resource class and states.
func (sh *sharer) node(n Node) Node {
	n.ResourceClass, n.ProvisionState, n.PowerState = sh.str(n.ResourceClass), sh.str(n.ProvisionState), sh.str(n.PowerState)
	n.Properties, n.Capabilities = sh.strMap(n.Properties), sh.strMap(n.Capabilities)
	n.Traits = sh.sortedList(n.Traits)
	return n
}

// flavor returns f as cloneFlavor does, its extra specs and access list
// shared with the servers that embed an equal flavor.
func (sh *sharer) flavor(f Flavor) Flavor {
	f.ExtraSpecs = sh.strMap(f.ExtraSpecs)
	if len(f.ExtraSpecs) == 0 {
		f.ExtraSpecs = nil
	}
	f.Access = sh.list(f.Access)
	return f
}

// The decoders of snapshot records share through the sharer of their
// record loader: a value's encoding in the record is its key, so a value
// seen before is neither decoded nor allocated again.

// sharedStrMap reads a map as strMap does.
func (d *decoder) sharedStrMap(sh *sharer) map[string]string {
	if sh == nil {
		return d.strMap()
	}
	raw := d.raw(d.skipStrMap)
	if d.err != nil || len(raw) == 1 { // a count of 0: nil, as strMap reads it
		return nil
	}
	if v, ok := sh.maps[raw]; ok {
		return v
	}
	m := (&decoder{s: raw}).strMap()
	sh.putMap(raw, m)
	return m
}

// sharedStrs reads a list as strs does.
func (d *decoder) sharedStrs(sh *sharer) []string {
	if sh == nil {
		return d.strs()
	}
	raw := d.raw(d.skipStrs)
	if d.err != nil || len(raw) == 1 {
		return nil
	}
	if v, ok := sh.lists[raw]; ok {
		return v
	}
	l := (&decoder{s: raw}).strs()
	sh.putList(raw, l)
	return l
}

// raw runs skip and returns the part of the body it read.
func (d *decoder) raw(skip func()) string {
	start := d.s
	skip()
	return start[:len(start)-len(d.s)]
}

// skipStrMap reads past a map written by appendStrMap, checking it as
// strMap does.
func (d *decoder) skipStrMap() {
	n := d.length(2)
	prev := ""
	for i := range n {
		k := d.str()
		if i > 0 && k <= prev {
			d.fail()
			return
		}
		d.str()
		prev = k
	}
}

// skipStrs reads past a list written by appendStrs.
func (d *decoder) skipStrs() {
	for range d.length(1) {
		d.str()
	}
}

// sharedCounts reads the resources of one provider of a claim as counts
// does.
func (d *decoder) sharedCounts(sh *sharer) map[string]int64 {
	if sh == nil {
		return d.counts()
	}
	raw := d.raw(d.skipCounts)
	if d.err != nil {
		return nil
	}
	if v, ok := sh.counts[raw]; ok {
		return v
	}
	m := (&decoder{s: raw}).counts()
	sh.putCounts(raw, m)
	return m
}

// skipCounts reads past the resources of one provider of a claim,
// checking them as counts does.
func (d *decoder) skipCounts() {
	prc := ""
	for j := range d.length(2) {
		rc := d.str()
		if j > 0 && rc <= prc {
			d.fail()
			return
		}
		d.int()
		prc = rc
	}
}
