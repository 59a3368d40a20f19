package driver

// This file is the driver's side of scheduling: which Ironic nodes a
// build may ask Ironic for. The rules live in fsm/sched — the flavor's
// request (sched.Parse, corral's one parser of extra specs) and whether a
// node matches it (class, traits, capabilities) — so the node the leader
// claimed and the nodes the driver offers Ironic follow the same rules.

import (
	"errors"
	"maps"
	"slices"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/sched"
)

// request parses a server's embedded flavor; a malformed one fails the
// build for good.
func request(f fsm.Flavor) (sched.Request, error) {
	r, err := sched.Parse(fsm.SchedFlavor(f))
	if err != nil {
		return r, compute.Permanent("No valid host was found. %v", err)
	}
	return r, nil
}

// flavorCapabilities are the capabilities a deploy writes into the node's
// instance_info (what the flavor asked the node to have).
func flavorCapabilities(f fsm.Flavor) map[string]string {
	r, _ := sched.Parse(fsm.SchedFlavor(f)) // reserve already refused a malformed flavor
	if len(r.Capabilities) == 0 {
		return nil
	}
	return r.Capabilities
}

// claimedNodeFits checks the node the scheduler claimed against the
// flavor's capabilities: the scheduler never claims a node without them,
// but the node's capabilities may have changed since.
func claimedNodeFits(n fsm.Node, f fsm.Flavor) error {
	r, err := request(f)
	if err != nil {
		return err
	}
	if !r.HasCapabilities(n.Capabilities) {
		var want []string
		for _, k := range slices.Sorted(maps.Keys(r.Capabilities)) {
			want = append(want, k+":"+r.Capabilities[k])
		}
		return compute.Permanent("No valid host was found. The claimed Ironic node %s lacks the capabilities %v of flavor %s (it has %v)",
			n.UUID, want, f.Name, n.Capabilities)
	}
	return nil
}

// candidates returns the raw Ironic class and the mirrored nodes matching
// the flavor (sched.Request.MatchesNode). Errors are permanent unless the
// mirror is still empty.
func (d *Driver) candidates(store *fsm.Store, f fsm.Flavor) (string, []fsm.Node, error) {
	r, err := request(f)
	if err != nil {
		return "", nil, err
	}
	class := r.NodeClass()
	if class == "" {
		return "", nil, compute.Permanent("No valid host was found. Flavor %s asks for no custom resource class, or for several: set one resources:CUSTOM_<CLASS>=1 on it", f.Name)
	}
	nodes := store.Nodes()
	if len(nodes) == 0 {
		return "", nil, errors.New("the Ironic node mirror is empty (first sync pending)")
	}
	raw := ""
	var out []fsm.Node
	for _, n := range nodes {
		sn := fsm.SchedNode(n)
		if n.Missing || sn.Class != class {
			continue
		}
		if raw == "" {
			raw = n.ResourceClass
		}
		if r.MatchesNode(sn) {
			out = append(out, n)
		}
	}
	if raw == "" {
		return "", nil, compute.Permanent("No valid host was found. No Ironic node has a resource class that normalises to %s", class)
	}
	return raw, out, nil
}
