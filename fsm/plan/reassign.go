package plan

import "sort"

// Assignment moves one server to a host.
type Assignment struct {
	ServerID string
	Host     string
}

// Reassign plans new owners for servers (those of a dead or drained
// host): servers in id order, each to the candidate with the fewest
// servers at that point (counting the plan so far), ties broken by the
// rendezvous hash of the server id. Servers get no assignment when there
// is no candidate. The result depends only on the inputs, not on their
// order.
func Reassign(serverIDs []string, cands []Candidate) []Assignment {
	ids := append([]string(nil), serverIDs...)
	sort.Strings(ids)
	cs := append([]Candidate(nil), cands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	if len(cs) == 0 {
		return nil
	}
	out := make([]Assignment, 0, len(ids))
	for _, id := range ids {
		best := chooseIndex(cs, id)
		cs[best].Servers++
		out = append(out, Assignment{ServerID: id, Host: cs[best].Name})
	}
	return out
}

// chooseIndex is ChooseHost returning the index.
func chooseIndex(cands []Candidate, serverID string) int {
	best := -1
	var bestScore uint64
	for i, c := range cands {
		score := Rendezvous(serverID, c.Name)
		if best < 0 || c.Servers < cands[best].Servers ||
			c.Servers == cands[best].Servers && (score > bestScore || score == bestScore && c.Name < cands[best].Name) {
			best, bestScore = i, score
		}
	}
	return best
}
