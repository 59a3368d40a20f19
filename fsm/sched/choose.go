package sched

import (
	"slices"
	"strings"
)

// Candidate is a compute host a server may be given to.
type Candidate struct {
	Name    string
	Servers int // live servers the host owns now
}

// ChooseHost applies the instance-count weigher: the candidate with the
// fewest servers wins; ties go to the highest rendezvous score for the
// server id, so equal hosts share new servers evenly and every peer picks
// the same one whatever the order of cands. It returns "" when there is no
// candidate.
func ChooseHost(cands []Candidate, serverID string) string {
	if len(cands) == 0 {
		return ""
	}
	return cands[chooseIndex(cands, SeedHash(serverID))].Name
}

// chooseIndex is ChooseHost returning the index, for a hashed seed.
func chooseIndex(cands []Candidate, seed uint64) int {
	best := -1
	var bestScore uint64
	for i, c := range cands {
		hi, lo := Key(c.Name)
		score := Score(seed, hi, lo)
		if best < 0 || c.Servers < cands[best].Servers ||
			c.Servers == cands[best].Servers && (score > bestScore || score == bestScore && c.Name < cands[best].Name) {
			best, bestScore = i, score
		}
	}
	return best
}

// Assignment moves one server to a host.
type Assignment struct {
	ServerID string
	Host     string
}

// Reassign plans new owners for servers (those of a dead or drained
// host): servers in id order, each to the candidate with the fewest
// servers at that point (counting the plan so far), ties broken by the
// rendezvous hash of the server id. It returns nil when there is no
// candidate. The result depends only on the inputs, not on their order.
func Reassign(serverIDs []string, cands []Candidate) []Assignment {
	if len(cands) == 0 {
		return nil
	}
	ids := slices.Clone(serverIDs)
	slices.Sort(ids)
	cs := slices.Clone(cands)
	slices.SortFunc(cs, func(a, b Candidate) int { return strings.Compare(a.Name, b.Name) })
	// Host keys are hashed once, not once per server.
	type keyed struct{ hi, lo uint64 }
	keys := make([]keyed, len(cs))
	for i, c := range cs {
		keys[i].hi, keys[i].lo = Key(c.Name)
	}
	out := make([]Assignment, 0, len(ids))
	for _, id := range ids {
		seed := SeedHash(id)
		best := -1
		var bestScore uint64
		for i, c := range cs {
			score := Score(seed, keys[i].hi, keys[i].lo)
			if best < 0 || c.Servers < cs[best].Servers || c.Servers == cs[best].Servers && score > bestScore {
				best, bestScore = i, score // names are sorted and distinct: an equal score keeps the first
			}
		}
		cs[best].Servers++
		out = append(out, Assignment{ServerID: id, Host: cs[best].Name})
	}
	return out
}
