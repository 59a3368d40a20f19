package sched

import (
	"maps"
	"slices"
)

// Server group policies, as Nova names them. A group's policy is over
// compute hosts: for corral, a server's owner host (the corral peer that
// builds, acts on and deletes it), as Nova's Ironic driver counts each
// nova-compute service as one host whatever the number of its nodes. Two
// servers of an anti-affinity group are owned by two different peers, so
// that the death of one peer never leaves the group's servers without a
// manager at once; it says nothing of the nodes' racks or power.
const (
	PolicyAffinity         = "affinity"
	PolicyAntiAffinity     = "anti-affinity"
	PolicySoftAffinity     = "soft-affinity"
	PolicySoftAntiAffinity = "soft-anti-affinity"
)

// Group is a server group as scheduling sees it: its policy and where
// its live members are.
type Group struct {
	Policy string
	// MaxPerHost is anti-affinity's max_server_per_host (0: 1).
	MaxPerHost int
	// Members counts the group's live members per owner host (the server
	// being placed excluded).
	Members map[string]int
}

// Hard reports whether the policy refuses hosts (rather than preferring
// some).
func (g *Group) Hard() bool {
	return g != nil && (g.Policy == PolicyAffinity || g.Policy == PolicyAntiAffinity)
}

func (g *Group) maxPerHost() int {
	if g.MaxPerHost <= 0 {
		return 1
	}
	return g.MaxPerHost
}

// Allows reports whether the group's hard policy lets a new member go to
// host: affinity, to a host that holds the members (any while there are
// none); anti-affinity, to a host holding fewer than max_server_per_host
// of them. Soft policies and no group allow every host.
func (g *Group) Allows(host string) bool {
	if g == nil {
		return true
	}
	switch g.Policy {
	case PolicyAffinity:
		return g.total() == 0 || g.Members[host] > 0
	case PolicyAntiAffinity:
		return g.Members[host] < g.maxPerHost()
	}
	return true
}

func (g *Group) total() int {
	n := 0
	for _, c := range g.Members {
		n += c
	}
	return n
}

// Hosts narrows candidates to those the group wants for a new member, in
// their order: a hard policy keeps the hosts it allows (possibly none:
// no valid host, as Nova's ServerGroup filters answer); soft-affinity
// keeps the hosts with the most members, soft-anti-affinity those with
// the fewest (corral weighs the group before the instance count, where
// Nova adds the two weighers' scores). No group keeps them all.
func (g *Group) Hosts(cands []Candidate) []Candidate {
	if g == nil || len(cands) == 0 {
		return cands
	}
	var out []Candidate
	switch g.Policy {
	case PolicyAffinity, PolicyAntiAffinity:
		for _, c := range cands {
			if g.Allows(c.Name) {
				out = append(out, c)
			}
		}
	case PolicySoftAffinity, PolicySoftAntiAffinity:
		best := g.Members[cands[0].Name]
		for _, c := range cands[1:] {
			n := g.Members[c.Name]
			if g.Policy == PolicySoftAffinity && n > best || g.Policy == PolicySoftAntiAffinity && n < best {
				best = n
			}
		}
		for _, c := range cands {
			if g.Members[c.Name] == best {
				out = append(out, c)
			}
		}
	default:
		return cands
	}
	return out
}

// Add counts a new member on host.
func (g *Group) Add(host string) {
	if g == nil {
		return
	}
	if g.Members == nil {
		g.Members = map[string]int{}
	}
	g.Members[host]++
}

// Clone returns a copy of g whose counts can change alone.
func (g *Group) Clone() *Group {
	if g == nil {
		return nil
	}
	c := *g
	c.Members = maps.Clone(g.Members)
	return &c
}

// ReassignGroups is Reassign for servers that may belong to server groups
// (groups maps a server id to its group; the groups' counts are those of
// the members that stay where they are). Each server goes, in id order,
// to the candidate with the fewest servers among those its group wants
// (Group.Hosts, counting the plan so far): affinity members of a dead
// host move together to one host, anti-affinity members to different
// hosts. When a hard policy leaves no candidate (fewer live hosts than an
// anti-affinity group needs, or the host of an affinity group's other
// members is no candidate), the server still moves, to the host its group
// counts least on: every live server must have a live owner, and a
// group's policy cannot hold that back. It returns nil without candidates.
func ReassignGroups(serverIDs []string, cands []Candidate, groups map[string]*Group) []Assignment {
	if len(cands) == 0 {
		return nil
	}
	ids := slices.Clone(serverIDs)
	slices.Sort(ids)
	cs := slices.Clone(cands)
	slices.SortFunc(cs, func(a, b Candidate) int { return compareNames(a.Name, b.Name) })
	// One copy of each group, shared by its members: the plan counts as
	// it goes.
	own := map[*Group]*Group{}
	out := make([]Assignment, 0, len(ids))
	for _, id := range ids {
		g := groups[id]
		if g != nil {
			if own[g] == nil {
				own[g] = g.Clone()
			}
			g = own[g]
		}
		pool := cs
		if g != nil {
			pool = g.Hosts(cs)
			if len(pool) == 0 {
				pool = (&Group{Policy: PolicySoftAntiAffinity, Members: g.Members}).Hosts(cs)
			}
		}
		best := pool[chooseIndex(pool, SeedHash(id))].Name
		for i := range cs {
			if cs[i].Name == best {
				cs[i].Servers++
			}
		}
		g.Add(best)
		out = append(out, Assignment{ServerID: id, Host: best})
	}
	return out
}

func compareNames(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
