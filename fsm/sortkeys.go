package fsm

import (
	"cmp"
	"encoding/binary"
	"maps"
	"slices"
	"strings"
)

// sortedIDs returns the keys of m in ascending order, as sortedKeys does,
// faster for the big maps a snapshot walks (servers, nodes). IDs share
// long prefixes (UUIDs of one deployment, names with a counter), which
// make string comparisons slow: the keys are sorted by the 16 bytes that
// follow the prefix common to all of them, as two integers, and by the
// whole string only where those are equal.
func sortedIDs[V any](m map[string]V) []string {
	if len(m) < 2 {
		return sortedKeys(m)
	}
	ids := make([]string, 0, len(m))
	lcp := -1
	for id := range m {
		if lcp < 0 {
			lcp = len(id)
		} else if lcp > 0 {
			n, first := min(lcp, len(id)), ids[0]
			i := 0
			for i < n && id[i] == first[i] {
				i++
			}
			lcp = i
		}
		ids = append(ids, id)
	}
	// The sorted elements hold no pointers (the index stands for the
	// string), so swapping them costs no write barrier while the garbage
	// collector runs.
	type keyed struct {
		hi, lo uint64
		i      int
	}
	ks := make([]keyed, len(ids))
	var buf [16]byte
	for i, id := range ids {
		clear(buf[:])
		copy(buf[:], id[lcp:])
		ks[i] = keyed{binary.BigEndian.Uint64(buf[:8]), binary.BigEndian.Uint64(buf[8:]), i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo), strings.Compare(ids[a.i], ids[b.i]))
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = ids[k.i]
	}
	return out
}

// sortedKeys returns the keys of m in ascending order, so that walks over
// state maps never depend on map iteration order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
