package sched

import (
	"hash/fnv"
	"slices"
)

// SeedHash hashes the seed of a rendezvous choice (typically a server id)
// once, for many Score calls.
func SeedHash(seed string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	return h.Sum64()
}

// Key is the 128-bit key a name is scored by: a canonical lower-case UUID
// is its own 128 bits (so Placement, which keys providers by UUID, scores a
// node exactly as RankNodes does); any other name is two FNV-1a hashes.
func Key(name string) (hi, lo uint64) {
	if hi, lo, ok := uuidBits(name); ok {
		return hi, lo
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	hi = h.Sum64()
	_, _ = h.Write([]byte{0})
	return hi, h.Sum64()
}

// uuidBits parses a canonical lower-case UUID (8-4-4-4-12 hex digits).
func uuidBits(s string) (hi, lo uint64, ok bool) {
	if len(s) != 36 {
		return 0, 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return 0, 0, false
			}
			continue
		}
		var v uint64
		switch {
		case c >= '0' && c <= '9':
			v = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			v = uint64(c-'a') + 10
		default:
			return 0, 0, false
		}
		if n < 16 {
			hi = hi<<4 | v
		} else {
			lo = lo<<4 | v
		}
		n++
	}
	return hi, lo, true
}

// Score is the rendezvous (highest random weight) score of the key (hi,
// lo) for a hashed seed: a well-mixed 64-bit value. It is the one
// rendezvous hash of corral.
func Score(seed, hi, lo uint64) uint64 {
	return mix(mix(seed^hi) ^ lo)
}

// Rendezvous returns the score of name for seed.
func Rendezvous(seed, name string) uint64 {
	hi, lo := Key(name)
	return Score(SeedHash(seed), hi, lo)
}

// mix is splitmix64's finaliser: FNV alone clusters similar inputs.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// RankNodes orders node ids for serverID by rendezvous score, highest
// first (ties by id), so that concurrent builds try different nodes first
// and a retry of the same server tries them in the same order. For node
// UUIDs it is the order of Placement's candidates seeded with serverID.
func RankNodes(nodes []string, serverID string) []string {
	seed := SeedHash(serverID)
	type ranked struct {
		id    string
		score uint64
	}
	rs := make([]ranked, len(nodes))
	for i, id := range nodes {
		hi, lo := Key(id)
		rs[i] = ranked{id, Score(seed, hi, lo)}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.id
	}
	return out
}
