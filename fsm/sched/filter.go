package sched

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Node is an Ironic node as scheduling sees it.
type Node struct {
	UUID string
	// Class is the node's resource class as Placement spells it
	// (CUSTOM_BAREMETAL_GOLD).
	Class        string
	Traits       []string
	Capabilities map[string]string
}

// HasCapabilities reports whether caps (a node's) holds every capability
// of the request with the same value.
func (r Request) HasCapabilities(caps map[string]string) bool {
	for k, v := range r.Capabilities {
		if got, ok := caps[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// MatchesNode reports whether a node satisfies the request: its class is
// the request's NodeClass, it has every required trait and no forbidden
// one, and every required capability. Availability is not looked at.
func (r Request) MatchesNode(n Node) bool {
	if c := r.NodeClass(); c == "" || n.Class != c {
		return false
	}
	for _, t := range r.Required {
		if !slices.Contains(n.Traits, t) {
			return false
		}
	}
	for _, t := range r.Forbidden {
		if slices.Contains(n.Traits, t) {
			return false
		}
	}
	return r.HasCapabilities(n.Capabilities)
}

// MatchNodes returns the nodes that satisfy the request, in their order.
func (r Request) MatchNodes(nodes []Node) []Node {
	var out []Node
	for _, n := range nodes {
		if r.MatchesNode(n) {
			out = append(out, n)
		}
	}
	return out
}

// Offer is one allocation candidate: a resource provider that can take
// the request now, and the claim that would take it.
type Offer struct {
	Provider string
	Claim    map[string]map[string]int64
	// Host is, for a hypervisor's own provider, the host that serves it,
	// with its load in Servers. Empty for an Ironic node, which any
	// Ironic host can serve.
	Host    string
	Servers int
	// Node marks an Ironic node provider; Capabilities are its capabilities
	// (hypervisors report none, so a request with capabilities never lands
	// on one).
	Node         bool
	Capabilities map[string]string
}

// Decision is where a new server goes: its owner host and its claim, or
// why there is none.
type Decision struct {
	Host        string
	Claim       map[string]map[string]int64
	NoValidHost string
	// NoCandidate is set when no provider can take the request (rather
	// than no host being up, or the flavor asking for nothing).
	NoCandidate bool
}

const noValidHost = "No valid host was found. "

// NoIronicHost is the reason given when an Ironic node fits but no host of
// kind ironic is up to own the server.
const NoIronicHost = noValidHost + "No compute host of kind ironic is up: check `corral host list`."

// Place decides where a new server goes. offers are the allocation
// candidates in preference order (Placement's order, seeded with the
// server id); ironicHosts are the hosts that may own a server on an Ironic
// node. Offers that lack a required capability are dropped first. A
// hypervisor offer wins over a node (a VM flavor lands on a VM host), the
// host chosen by ChooseHost among them; otherwise the first node offer is
// claimed and its owner is ChooseHost of ironicHosts. When nothing fits,
// the Decision says why.
func Place(serverID string, r Request, offers []Offer, ironicHosts []Candidate) Decision {
	if len(r.Resources) == 0 {
		return Decision{NoValidHost: fmt.Sprintf(noValidHost+"Flavor %s requests no resources", r.Flavor)}
	}
	var vmHosts []Candidate
	vmClaim := map[string]map[string]map[string]int64{}
	var nodeClaim map[string]map[string]int64
	lacking := 0
	for _, o := range offers {
		if !r.HasCapabilities(o.Capabilities) {
			lacking++
			continue
		}
		switch {
		case o.Host != "":
			if _, seen := vmClaim[o.Host]; !seen {
				vmHosts = append(vmHosts, Candidate{Name: o.Host, Servers: o.Servers})
				vmClaim[o.Host] = o.Claim
			}
		case o.Node && nodeClaim == nil:
			nodeClaim = o.Claim
		}
	}
	switch {
	case len(vmHosts) > 0:
		h := ChooseHost(vmHosts, serverID)
		return Decision{Host: h, Claim: vmClaim[h]}
	case nodeClaim != nil:
		h := ChooseHost(ironicHosts, serverID)
		if h == "" {
			return Decision{NoValidHost: NoIronicHost}
		}
		return Decision{Host: h, Claim: nodeClaim}
	}
	return Decision{NoValidHost: r.nothingFits(lacking), NoCandidate: true}
}

// nothingFits explains an empty choice; lacking is how many providers had
// room but not the capabilities.
func (r Request) nothingFits(lacking int) string {
	var want []string
	for _, rc := range slices.Sorted(maps.Keys(r.Resources)) {
		want = append(want, fmt.Sprintf("%s:%d", rc, r.Resources[rc]))
	}
	hint := ""
	custom := slices.ContainsFunc(slices.Collect(maps.Keys(r.Resources)), func(rc string) bool { return strings.HasPrefix(rc, "CUSTOM_") })
	if custom && (r.Resources["VCPU"] > 0 || r.Resources["MEMORY_MB"] > 0 || r.Resources["DISK_GB"] > 0) {
		hint = " (a bare-metal flavor should set resources:VCPU=0, resources:MEMORY_MB=0 and resources:DISK_GB=0)"
	}
	traits := ""
	if t := r.Traits(); len(t) > 0 {
		traits = " with traits " + strings.Join(t, ",")
	}
	caps := ""
	if len(r.Capabilities) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(r.Capabilities)) {
			kv = append(kv, k+":"+r.Capabilities[k])
		}
		caps = " and capabilities " + strings.Join(kv, ",")
		if lacking > 0 {
			caps += fmt.Sprintf(" (%d with room lack them)", lacking)
		}
	}
	return fmt.Sprintf(noValidHost+"There are not enough hosts available: no resource provider can give %s%s%s%s",
		strings.Join(want, ","), traits, caps, hint)
}
