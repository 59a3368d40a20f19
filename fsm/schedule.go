package fsm

import (
	"errors"
	"fmt"
	"slices"

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

// maxCandidates bounds one scheduling query.
const maxCandidates = 1000

// schedule fills c.Host and c.Claim from the current state: the flavor's
// request (sched.Parse), allocation candidates from Placement seeded with
// the server id, then sched.Place, which drops candidates lacking a
// required capability and picks the host. When nothing fits, c.NoValidHost
// says why.
func schedule(st *state, c *CreateServer) {
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
	d := sched.Place(c.ID, req, nil, ironic) // no resources: says so
	if len(req.Resources) > 0 {
		offers, full, err := placementOffers(st, req, c.Avoid, maxCandidates, c.ID)
		if err != nil {
			c.NoValidHost = "No valid host was found. " + err.Error()
			return
		}
		d = sched.Place(c.ID, req, offers, ironic)
		if d.NoValidHost != "" && full && len(req.Capabilities) > 0 {
			// Capabilities are not a Placement filter: every candidate
			// returned may lack them while one beyond the limit has them.
			if offers, _, err = placementOffers(st, req, c.Avoid, 0, c.ID); err == nil {
				d = sched.Place(c.ID, req, offers, ironic)
			}
		}
	}
	c.Host, c.Claim, c.NoValidHost, c.starved = d.Host, d.Claim, d.NoValidHost, d.NoCandidate
}

// placementOffers turns Placement's allocation candidates for req into the
// scheduler's offers: the own provider of an up, undrained, not avoided
// hypervisor host, with its load, or an Ironic node with its
// capabilities. full reports that the limit was reached.
func placementOffers(st *state, req sched.Request, avoid []string, limit int, seed string) (offers []sched.Offer, full bool, err error) {
	cands, err := st.placement.Candidates(placement.CandidateQuery{Resources: req.Resources, Required: req.Traits(), Seed: seed, Limit: limit})
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
	load := hostLoad(st)
	for _, cand := range cands {
		if len(cand.Allocations) != 1 {
			continue
		}
		for prov := range cand.Allocations {
			if h, ok := hostOf[prov]; ok {
				offers = append(offers, sched.Offer{Provider: prov, Claim: cand.Allocations, Host: h, Servers: load[h]})
			} else if n, isNode := st.nodes[prov]; isNode {
				offers = append(offers, sched.Offer{Provider: prov, Claim: cand.Allocations, Node: true, Capabilities: n.Capabilities})
			}
		}
	}
	return offers, limit > 0 && len(cands) == limit, nil
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
	switch {
	case err == nil:
		return nil
	case errors.Is(err, placement.ErrNotEnough):
		return fmt.Errorf("%w: the claim no longer fits, retry the request: %w", ErrStaleDecision, err)
	case errors.Is(err, placement.ErrConcurrentUpdate):
		return fmt.Errorf("%w: server %s already holds allocations in Placement: %w", ErrConflict, consumer, err)
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
