// Package plan holds corral's pure, deterministic planners: where a new
// server goes, and (later) where a dead host's servers go. The same inputs
// give the same answer on every peer; nothing here reads a clock, a random
// source or map order.
package plan

import (
	"hash/fnv"
	"sort"
)

// Candidate is a host a server may be placed on.
type Candidate struct {
	Name    string
	Servers int // servers the host owns now (not deleted)
}

// Rendezvous returns the rendezvous (highest random weight) score of host
// for serverID: a well-mixed 64-bit hash of both.
func Rendezvous(serverID, host string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(serverID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(host))
	return mix(h.Sum64())
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

// ChooseHost applies the instance-count weigher: the candidate with the
// fewest servers wins; ties go to the highest rendezvous score for the
// server id, so equal hosts share new servers evenly and every peer picks
// the same one. It returns "" when there is no candidate.
func ChooseHost(cands []Candidate, serverID string) string {
	if len(cands) == 0 {
		return ""
	}
	return cands[chooseIndex(cands, serverID)].Name
}

// RankNodes orders node ids for serverID by rendezvous score, highest
// first, so that concurrent builds try different nodes first and a retry
// of the same server tries them in the same order.
func RankNodes(nodes []string, serverID string) []string {
	out := append([]string(nil), nodes...)
	sort.Slice(out, func(i, j int) bool {
		a, b := Rendezvous(serverID, out[i]), Rendezvous(serverID, out[j])
		if a != b {
			return a > b
		}
		return out[i] < out[j]
	})
	return out
}
