package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/fsm/sched"
)

// SchedFlavor is a flavor as the scheduler reads it (sched.Parse).
func SchedFlavor(f Flavor) sched.Flavor {
	return sched.Flavor{Name: f.Name, VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, Ephemeral: f.Ephemeral,
		Swap: f.Swap, ExtraSpecs: f.ExtraSpecs}
}

// SchedNode is a mirrored Ironic node as the scheduler matches it: its
// class as Placement spells it, its traits and capabilities.
func SchedNode(n Node) sched.Node {
	return sched.Node{UUID: n.UUID, Class: NormalizeResourceClass(n.ResourceClass), Traits: n.Traits, Capabilities: n.Capabilities}
}

// maxCandidates bounds one scheduling query. A bare-metal request takes
// the first node, in the server's rendezvous order, that has the flavor's
// capabilities, and a query without capabilities needs only that first
// one; a VM request chooses among the hypervisor hosts returned, a few per
// cluster. 64 keeps a decision cheap (a query builds one candidate per
// provider returned) while leaving a choice among hosts; a request with
// capabilities that no returned candidate has is asked again without a
// limit.
const maxCandidates = 64

// pendingClaims are the decisions of a batch taken before the one being
// decided and not yet applied: their claims (provider → class → amount)
// and the servers they add to each host. A decision counts them as if
// they were applied, so that one batch does not give one node twice or
// pile its servers on one host.
type pendingClaims struct {
	usage map[string]map[string]int64
	load  map[string]int
	// members counts, per server group, the batch's servers decided on
	// each host.
	members map[string]map[string]int
	// size is the number of servers in the batch.
	size int
	// cache holds, per flavor (and avoided hosts), the offers of one
	// Placement query for the whole batch: each server takes from them
	// what its predecessors left, so a batch costs one query per flavor
	// rather than one per server.
	cache map[string]*offerCache
}

type offerCache struct {
	offers []sched.Offer
	full   bool // the query's limit was reached: more candidates exist
}

func newPendingClaims(size int) *pendingClaims {
	return &pendingClaims{usage: map[string]map[string]int64{}, load: map[string]int{}, members: map[string]map[string]int{},
		size: size, cache: map[string]*offerCache{}}
}

// add counts the decision of c.
func (p *pendingClaims) add(c *CreateServer) {
	if p == nil || c.Host == "" {
		return
	}
	p.load[c.Host]++
	if c.Group != "" {
		if p.members[c.Group] == nil {
			p.members[c.Group] = map[string]int{}
		}
		p.members[c.Group][c.Host]++
	}
	for prov, rcs := range c.Claim {
		u := p.usage[prov]
		if u == nil {
			u = map[string]int64{}
			p.usage[prov] = u
		}
		for rc, n := range rcs {
			u[rc] += n
		}
	}
}

// remove takes back the decision of c that add counted (a boot request
// whose servers are placed whole or not at all gives back those it
// placed when it falls short).
func (p *pendingClaims) remove(c *CreateServer) {
	if p == nil || c.Host == "" {
		return
	}
	if p.load[c.Host]--; p.load[c.Host] <= 0 {
		delete(p.load, c.Host)
	}
	for prov, rcs := range c.Claim {
		u := p.usage[prov]
		for rc, n := range rcs {
			if u[rc] -= n; u[rc] <= 0 {
				delete(u, rc)
			}
		}
		if len(u) == 0 {
			delete(p.usage, prov)
		}
	}
}

// schedule fills c.Host and c.Claim from the current state: the flavor's
// request (sched.Parse), allocation candidates from Placement seeded with
// the server id, then sched.Place, which drops candidates lacking a
// required capability and picks the host. When nothing fits, c.NoValidHost
// says why.
func schedule(st *state, c *CreateServer) { scheduleWith(st, c, nil) }

// scheduleWith is schedule counting the pending claims of a batch (nil:
// none).
func scheduleWith(st *state, c *CreateServer, pending *pendingClaims) {
	f, ok := st.flavors[c.FlavorID]
	if !ok {
		return // Apply rejects the unknown flavor
	}
	req, err := sched.Parse(SchedFlavor(f))
	if err != nil {
		c.NoValidHost = "No valid host was found. " + err.Error()
		return
	}
	ironic := placementCandidates(st, KindIronic, c.Avoid...)
	if pending != nil {
		for i := range ironic {
			ironic[i].Servers += pending.load[ironic[i].Name]
		}
	}
	group := schedGroup(st, c.Group, c.ID)
	if group != nil && pending != nil {
		for h, n := range pending.members[c.Group] {
			group.Members[h] += n
		}
	}
	allIronic := ironic
	if group != nil {
		ironic = group.Hosts(ironic)
	}
	d := sched.Place(c.ID, req, nil, ironic) // no resources: says so
	if len(req.Resources) > 0 {
		var offers []sched.Offer
		var full bool
		if pending != nil {
			offers, full, err = batchOffers(st, req, c, pending)
		} else {
			offers, full, err = placementOffers(st, req, c.Avoid, maxCandidates, c.ID, nil)
		}
		if err != nil {
			c.NoValidHost = "No valid host was found. " + err.Error()
			return
		}
		d = sched.Place(c.ID, req, groupOffers(group, offers), ironic)
		if d.NoValidHost != "" && full && len(req.Capabilities) > 0 {
			// Capabilities are not a Placement filter: every candidate
			// returned may lack them while one beyond the limit has them.
			if offers, _, err = placementOffers(st, req, c.Avoid, 0, c.ID, pending); err == nil {
				d = sched.Place(c.ID, req, groupOffers(group, offers), ironic)
			}
		}
		if d.NoValidHost != "" && group.Hard() && sched.Place(c.ID, req, offers, allIronic).NoValidHost == "" {
			d.NoValidHost = fmt.Sprintf("No valid host was found. There are not enough hosts available: the %s policy of server group %s leaves no host for the server.", group.Policy, c.Group)
		}
	}
	c.Host, c.Claim, c.NoValidHost, c.starved = d.Host, d.Claim, d.NoValidHost, d.NoCandidate
}

// groupOffers drops the hypervisor offers whose host the server's group
// does not want (Group.Hosts over the offers' hosts); node offers stay,
// their owner is chosen among the hosts the group wants.
func groupOffers(g *sched.Group, offers []sched.Offer) []sched.Offer {
	if g == nil {
		return offers
	}
	var hosts []sched.Candidate
	for _, o := range offers {
		if o.Host != "" {
			hosts = append(hosts, sched.Candidate{Name: o.Host, Servers: o.Servers})
		}
	}
	if len(hosts) == 0 {
		return offers
	}
	wanted := map[string]bool{}
	for _, h := range g.Hosts(hosts) {
		wanted[h.Name] = true
	}
	out := make([]sched.Offer, 0, len(offers))
	for _, o := range offers {
		if o.Host == "" || wanted[o.Host] {
			out = append(out, o)
		}
	}
	return out
}

// placementOffers turns Placement's allocation candidates for req into the
// scheduler's offers: the own provider of an up, undrained, not avoided
// hypervisor host, with its load, or an Ironic node with its
// capabilities. full reports that the limit was reached. pending (may be
// nil) is counted as used.
func placementOffers(st *state, req sched.Request, avoid []string, limit int, seed string, pending *pendingClaims) (offers []sched.Offer, full bool, err error) {
	q := placement.CandidateQuery{Resources: req.Resources, Required: req.Traits(), Seed: seed, Limit: limit}
	if pending != nil {
		q.Pending = pending.usage
	}
	cands, err := st.placement.Candidates(q)
	if err != nil {
		return nil, false, err
	}
	hostOf := map[string]string{}
	for _, name := range sortedKeys(st.hosts) {
		h := st.hosts[name]
		if h.Kind == KindHypervisor && h.Status == HostUp && !h.Drained && !slices.Contains(avoid, name) {
			hostOf[HostProviderUUID(name)] = name
		}
	}
	var load map[string]int
	for _, cand := range cands {
		if len(cand.Allocations) != 1 {
			continue
		}
		for prov := range cand.Allocations {
			if h, ok := hostOf[prov]; ok {
				if load == nil {
					load = hostLoad(st)
				}
				n := load[h]
				if pending != nil {
					n += pending.load[h]
				}
				offers = append(offers, sched.Offer{Provider: prov, Claim: cand.Allocations, Host: h, Servers: n})
			} else if n, isNode := st.nodes[prov]; isNode {
				offers = append(offers, sched.Offer{Provider: prov, Claim: cand.Allocations, Node: true, Capabilities: n.Capabilities})
			}
		}
	}
	return offers, limit > 0 && len(cands) == limit, nil
}

// batchOffers are the offers for one server of a batch: those of the
// batch's query for its flavor (seeded with the id of the first server that
// asked) that still fit on top of the claims decided before it, hosts
// with their load counting those decisions. When the query's candidates
// are all taken and it had reached its limit, Placement is asked again.
func batchOffers(st *state, req sched.Request, c *CreateServer, pending *pendingClaims) ([]sched.Offer, bool, error) {
	key := c.FlavorID + "\x00" + strings.Join(c.Avoid, ",")
	for {
		oc := pending.cache[key]
		fresh := oc == nil
		if fresh {
			limit := maxCandidates + pending.size
			offers, full, err := placementOffers(st, req, c.Avoid, limit, c.ID, pending)
			if err != nil {
				return nil, false, err
			}
			oc = &offerCache{offers: offers, full: full}
			pending.cache[key] = oc
		}
		var load map[string]int
		live := make([]sched.Offer, 0, len(oc.offers))
		for _, o := range oc.offers {
			if !st.placement.FitsWith(o.Provider, o.Claim[o.Provider], pending.usage[o.Provider]) {
				continue
			}
			if o.Host != "" {
				if load == nil {
					load = hostLoad(st)
				}
				o.Servers = load[o.Host] + pending.load[o.Host]
			}
			live = append(live, o)
		}
		if len(live) > 0 || !oc.full || fresh {
			return live, oc.full, nil
		}
		delete(pending.cache, key) // all taken, more exist: ask again
	}
}

// claim writes a new server's allocations; it fails, changing nothing,
// when they no longer fit. Only a claim that no longer fits is a stale
// decision (deciding again helps); any other refusal — the consumer
// already holds allocations, a malformed claim — would refuse every new
// decision for the server too, and is answered as it is.
func claim(st *state, consumer, project, user string, allocs map[string]map[string]int64) error {
	if len(allocs) == 0 {
		return nil
	}
	err := st.placement.SetAllocations(consumer, placement.ConsumerAllocations{ProjectID: project, UserID: user, Allocations: allocs})
	return claimErr(err, "server "+consumer)
}

// claimAll writes the allocations of several new servers at once (the
// servers of one boot request): all of them, or none when one no longer
// fits, with claim's errors.
func claimAll(st *state, claims map[string]placement.ConsumerAllocations) error {
	if len(claims) == 0 {
		return nil
	}
	return claimErr(st.placement.SetAllocationsMulti(claims), "a server of the request")
}

func claimErr(err error, who string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, placement.ErrNotEnough):
		return fmt.Errorf("%w: the claim no longer fits, retry the request: %w", ErrStaleDecision, err)
	case errors.Is(err, placement.ErrConcurrentUpdate):
		return fmt.Errorf("%w: %s already holds allocations in Placement: %w", ErrConflict, who, err)
	}
	return placementErr(err)
}

// dropClaim removes a consumer's allocations (deleted server, or a build
// that failed before holding a node).
func dropClaim(st *state, consumer string) {
	cur, ok := st.placement.Allocations(consumer)
	if !ok {
		return
	}
	_ = st.placement.SetAllocations(consumer, placement.ConsumerAllocations{ConsumerGeneration: cur.ConsumerGeneration,
		ProjectID: cur.ProjectID, UserID: cur.UserID, Allocations: map[string]map[string]int64{}})
}
