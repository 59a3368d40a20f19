package placement

import (
	"math/bits"
	"slices"
)

// Providers are indexed by a dense slot number, assigned at creation and
// reused after deletion. Slot numbers never leave the package and never
// decide an order: results are ordered by UUID (or seeded score and UUID),
// which the dense ids array holds as 128-bit keys so that ordering needs no
// pointer chasing.

// uuidKey is a canonical UUID as two integers; comparing keys compares the
// UUID strings.
type uuidKey struct{ hi, lo uint64 }

func keyOf(uuid string) uuidKey {
	var k uuidKey
	n := 0
	for i := 0; i < len(uuid); i++ {
		c := uuid[i]
		var v uint64
		switch {
		case c >= '0' && c <= '9':
			v = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			v = uint64(c-'a') + 10
		default:
			continue
		}
		if n < 16 {
			k.hi = k.hi<<4 | v
		} else {
			k.lo = k.lo<<4 | v
		}
		n++
	}
	return k
}

func (a uuidKey) cmp(b uuidKey) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

// posting is the set of slots having some property (an inventory class,
// free capacity of a class, a trait, an aggregate), as a bitmap.
type posting struct {
	key   string // the key this posting is filed under, shared by providers
	words []uint64
	n     int
}

func (p *posting) has(i int32) bool {
	w := int(i >> 6)
	return w < len(p.words) && p.words[w]&(1<<(uint(i)&63)) != 0
}

func (p *posting) set(i int32) {
	w := int(i >> 6)
	if w >= len(p.words) {
		p.words = append(p.words, make([]uint64, w+1-len(p.words))...)
	}
	if m := uint64(1) << (uint(i) & 63); p.words[w]&m == 0 {
		p.words[w] |= m
		p.n++
	}
}

func (p *posting) clear(i int32) {
	w := int(i >> 6)
	if m := uint64(1) << (uint(i) & 63); w < len(p.words) && p.words[w]&m != 0 {
		p.words[w] &^= m
		p.n--
	}
}

func (p *posting) clone() *posting {
	return &posting{key: p.key, words: slices.Clone(p.words), n: p.n}
}

// postings maps a key to its posting; empty postings are removed.
type postings map[string]*posting

// add files slot i under key and returns the stored copy of key, so that
// providers share one string per class, trait or aggregate.
func (m postings) add(key string, i int32) string {
	p := m[key]
	if p == nil {
		p = &posting{key: key}
		m[key] = p
	}
	p.set(i)
	return p.key
}

func (m postings) del(key string, i int32) {
	if p := m[key]; p != nil {
		p.clear(i)
		if p.n == 0 {
			delete(m, key)
		}
	}
}

func (m postings) clone() postings {
	out := make(postings, len(m))
	for k, p := range m {
		out[k] = p.clone()
	}
	return out
}

// bitmap is a scratch set of slots used while answering a query.
type bitmap []uint64

// and intersects b with p and reports whether anything is left.
func (b bitmap) and(p *posting) bool {
	var any uint64
	for i := range b {
		if i < len(p.words) {
			b[i] &= p.words[i]
			any |= b[i]
		} else {
			b[i] = 0
		}
	}
	return any != 0
}

func (b bitmap) andNot(p *posting) {
	for i := range b {
		if i >= len(p.words) {
			return
		}
		b[i] &^= p.words[i]
	}
}

func (b bitmap) or(p *posting) {
	for i := range b {
		if i < len(p.words) {
			b[i] |= p.words[i]
		}
	}
}

func (b bitmap) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func (b bitmap) each(fn func(int32)) {
	for w, word := range b {
		for word != 0 {
			t := bits.TrailingZeros64(word)
			fn(int32(w<<6 | t))
			word &= word - 1
		}
	}
}

// allocSlot gives p a slot.
func (s *Store) allocSlot(p *provider) {
	if n := len(s.free); n > 0 {
		p.idx = s.free[n-1]
		s.free = s.free[:n-1]
		s.slots[p.idx] = p
		s.ids[p.idx] = keyOf(p.uuid)
	} else {
		p.idx = int32(len(s.slots))
		s.slots = append(s.slots, p)
		s.ids = append(s.ids, keyOf(p.uuid))
	}
	s.live.set(p.idx)
}

func (s *Store) freeSlot(p *provider) {
	s.live.clear(p.idx)
	s.slots[p.idx] = nil
	s.ids[p.idx] = uuidKey{}
	s.free = append(s.free, p.idx)
}

// refreshFree keeps the free-capacity posting of class rc on p current: a
// provider is in it while at least one unit of rc is unallocated.
func (s *Store) refreshFree(p *provider, rc string) {
	if sl := p.slot(rc); sl != nil && sl.used < sl.cap {
		s.byFree.add(rc, p.idx)
	} else {
		s.byFree.del(rc, p.idx)
	}
}

// ordered returns every provider in UUID order.
func (s *Store) ordered() []*provider {
	idx := make([]int32, 0, len(s.providers))
	for i, p := range s.slots {
		if p != nil {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int { return s.ids[a].cmp(s.ids[b]) })
	out := make([]*provider, len(idx))
	for i, x := range idx {
		out[i] = s.slots[x]
	}
	return out
}
