package fsm

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/fsm/plan"
)

// FlavorRequest is what a flavor asks of Placement, as Nova computes it:
// VCPU, MEMORY_MB and DISK_GB from the flavor's fields, overridden by
// resources:<CLASS>=<N> extra specs (0 removes a class), and the traits
// of trait:<NAME>=required (and "!NAME" for =forbidden).
func FlavorRequest(f Flavor) (map[string]int64, []string) {
	res := map[string]int64{}
	if f.VCPUs > 0 {
		res["VCPU"] = int64(f.VCPUs)
	}
	if f.RAM > 0 {
		res["MEMORY_MB"] = int64(f.RAM)
	}
	if disk := int64(f.Disk) + int64(f.Ephemeral) + (int64(f.Swap)+1023)/1024; disk > 0 {
		res["DISK_GB"] = disk
	}
	var required []string
	for _, k := range sortedKeys(f.ExtraSpecs) {
		v := f.ExtraSpecs[k]
		switch {
		case strings.HasPrefix(k, "resources:"):
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				continue
			}
			rc := strings.TrimPrefix(k, "resources:")
			if n == 0 {
				delete(res, rc)
			} else {
				res[rc] = n
			}
		case strings.HasPrefix(k, "trait:") && v == "required":
			required = append(required, strings.TrimPrefix(k, "trait:"))
		case strings.HasPrefix(k, "trait:") && v == "forbidden":
			required = append(required, "!"+strings.TrimPrefix(k, "trait:"))
		}
	}
	return res, required
}

// maxCandidates bounds one scheduling query.
const maxCandidates = 1000

// schedule fills c.Host and c.Claim: allocation candidates for the
// flavor, then the host by instance count among those that can serve a
// candidate (a hypervisor serves its own provider; every ironic host can
// serve every node), then the claim of that candidate. When nothing fits,
// c.NoValidHost says why.
func schedule(st *state, c *CreateServer) {
	f, ok := st.flavors[c.FlavorID]
	if !ok {
		return // Apply rejects the unknown flavor
	}
	res, required := FlavorRequest(f)
	if len(res) == 0 {
		c.NoValidHost = fmt.Sprintf("No valid host was found. Flavor %s requests no resources", f.Name)
		return
	}
	cands, err := st.placement.Candidates(placement.CandidateQuery{Resources: res, Required: required, Seed: c.ID, Limit: maxCandidates})
	if err != nil {
		c.NoValidHost = "No valid host was found. " + err.Error()
		return
	}
	hostOf := map[string]string{}
	for _, name := range sortedKeys(st.hosts) {
		h := st.hosts[name]
		if h.Kind == KindHypervisor && h.Status == HostUp && !h.Drained && !slices.Contains(c.Avoid, name) {
			hostOf[HostProviderUUID(name)] = name
		}
	}
	load := hostLoad(st)
	var vmHosts []plan.Candidate
	vmClaim := map[string]map[string]map[string]int64{}
	var nodeClaim map[string]map[string]int64
	for _, cand := range cands {
		if len(cand.Allocations) != 1 {
			continue
		}
		for prov := range cand.Allocations {
			if h, ok := hostOf[prov]; ok {
				if _, seen := vmClaim[h]; !seen {
					vmHosts = append(vmHosts, plan.Candidate{Name: h, Servers: load[h]})
					vmClaim[h] = cand.Allocations
				}
			} else if _, isNode := st.nodes[prov]; isNode && nodeClaim == nil {
				nodeClaim = cand.Allocations
			}
		}
	}
	switch {
	case len(vmHosts) > 0:
		sort.Slice(vmHosts, func(i, j int) bool { return vmHosts[i].Name < vmHosts[j].Name })
		c.Host = plan.ChooseHost(vmHosts, c.ID)
		c.Claim = vmClaim[c.Host]
	case nodeClaim != nil:
		c.Host = plan.ChooseHost(placementCandidates(st, KindIronic, c.Avoid...), c.ID)
		if c.Host == "" {
			c.NoValidHost = "No valid host was found. No compute host of kind ironic is up: check `corral host list`."
			return
		}
		c.Claim = nodeClaim
	default:
		var want []string
		for _, rc := range sortedKeys(res) {
			want = append(want, fmt.Sprintf("%s:%d", rc, res[rc]))
		}
		hint := ""
		for rc := range res {
			if strings.HasPrefix(rc, "CUSTOM_") && (res["VCPU"] > 0 || res["MEMORY_MB"] > 0 || res["DISK_GB"] > 0) {
				hint = " (a bare-metal flavor should set resources:VCPU=0, resources:MEMORY_MB=0 and resources:DISK_GB=0)"
			}
		}
		c.NoValidHost = fmt.Sprintf("No valid host was found. There are not enough hosts available: no resource provider can give %s%s%s",
			strings.Join(want, ","), traitsNote(required), hint)
	}
}

func traitsNote(required []string) string {
	if len(required) == 0 {
		return ""
	}
	return " with traits " + strings.Join(required, ",")
}

// claim writes a new server's allocations; it fails, changing nothing,
// when they no longer fit.
func claim(st *state, consumer string, allocs map[string]map[string]int64) error {
	if len(allocs) == 0 {
		return nil
	}
	err := st.placement.SetAllocations(consumer, placement.ConsumerAllocations{ProjectID: "admin", UserID: "admin", Allocations: allocs})
	if err != nil {
		return fmt.Errorf("%w: the claim no longer fits, retry the request: %w", ErrStaleDecision, err)
	}
	return nil
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
