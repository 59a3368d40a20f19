package placement_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/wire"
)

// TestMixedCloud runs VMs and bare metal side by side in one cluster of
// two hypervisor hosts and three ironic hosts, against the simulator and
// a real Ironic: each kind of server lands on its kind of host and
// provider, never crossed, and the two share an L2 segment.
func TestMixedCloud(t *testing.T) {
	skipShort(t)
	t.Run("sim", func(t *testing.T) {
		testMixedCloud(t, e2e.SimIronic(t, sim.Options{DeployDelay: 100 * time.Millisecond}))
	})
	t.Run("real", func(t *testing.T) {
		testMixedCloud(t, e2e.RealIronic(t))
	})
}

func testMixedCloud(t *testing.T, ir *e2e.Ironic) {
	class := ir.Class("gold")
	rc := fsm.NormalizeResourceClass(class)
	nodeIDs := ir.EnrollNodes(t, 4, class)
	c := startCloud(t, ir, cloudSpec{Hypervisors: 2, Ironics: 3, BaseIP: 60})
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 60*time.Second)
	kinds, err := hostKinds(c.Agents[0])
	if err != nil {
		t.Fatal(err)
	}

	vm := createFlavor(t, c, c.Agents[2], "vm-tiny", 1, 1024, 1, nil)
	gold := createFlavor(t, c, c.Agents[3], "bare-metal-gold", 64, 131072, 371, goldSpecs(rc))

	// Every server on one network, through each agent in turn; a few VMs
	// also on a network of their own.
	shared, vmOnly := "6f1c2a70-0000-4000-8000-0000000000aa", "6f1c2a70-0000-4000-8000-0000000000bb"
	isVM := map[string]bool{}
	var ids []string
	for i := range 7 {
		a := c.Agents[i%len(c.Agents)]
		var id string
		if i%2 == 0 {
			id = boot(t, c, a, fmt.Sprintf("vm-%d", i), vm, shared, vmOnly)
			isVM[id] = true
		} else {
			id = boot(t, c, a, fmt.Sprintf("bm-%d", i), gold, shared)
		}
		ids = append(ids, id)
	}
	got := active(t, c, 120*time.Second, ids...)

	onNode := map[string]string{}
	vmUse := map[string]map[string]int64{} // hypervisor provider → class → sum
	for _, id := range ids {
		s := got[id]
		allocs, err := allocations(c.Agents[4], id)
		if err != nil {
			t.Fatal(err)
		}
		if isVM[id] {
			if kinds[s.Host] != fsm.KindHypervisor || s.Node != "" {
				t.Errorf("VM %s is on host %s (%s), node %q: want a hypervisor host and no node", s.Name, s.Host, kinds[s.Host], s.Node)
			}
			prov := fsm.HostProviderUUID(s.Host)
			want := map[string]map[string]int64{prov: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}}
			if !equalAllocs(allocs, want) {
				t.Errorf("VM %s allocations %v, want %v", s.Name, allocs, want)
			}
			if vmUse[prov] == nil {
				vmUse[prov] = map[string]int64{}
			}
			for k, v := range want[prov] {
				vmUse[prov][k] += v
			}
			continue
		}
		if kinds[s.Host] != fsm.KindIronic || !slices.Contains(nodeIDs, s.Node) {
			t.Errorf("bare-metal server %s is on host %s (%s), node %q: want an ironic host and one of %v", s.Name, s.Host, kinds[s.Host], s.Node, nodeIDs)
		}
		if other, dup := onNode[s.Node]; dup {
			t.Errorf("servers %s and %s are both on node %s", other, s.Name, s.Node)
		}
		onNode[s.Node] = s.Name
		if want := map[string]map[string]int64{s.Node: {rc: 1}}; !equalAllocs(allocs, want) {
			t.Errorf("bare-metal server %s allocations %v, want %v", s.Name, allocs, want)
		}
		if u, err := usages(c.Agents[1], s.Node); err != nil || u[rc] != 1 || u["VCPU"] != 0 {
			t.Errorf("node provider %s usages %v (%v), want %s=1 alone", s.Node, u, err, rc)
		}
		if specs := s.Flavor.ExtraSpecs; s.Flavor.OriginalName != "bare-metal-gold" || specs["resources:"+rc] != "1" || specs["resources:VCPU"] != "0" {
			t.Errorf("bare-metal server %s embeds flavor %+v", s.Name, s.Flavor)
		}
	}
	// The hypervisors' usages are the sum of their VMs; the node
	// providers offer the custom class alone.
	for name, kind := range kinds {
		if kind != fsm.KindHypervisor {
			continue
		}
		prov := fsm.HostProviderUUID(name)
		u, err := usages(c.Agents[0], prov)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range []string{"VCPU", "MEMORY_MB", "DISK_GB"} {
			if u[cl] != vmUse[prov][cl] {
				t.Errorf("hypervisor %s uses %s=%d, its VMs %d", name, cl, u[cl], vmUse[prov][cl])
			}
		}
	}
	for _, n := range nodeIDs {
		inv, err := inventories(c.Agents[2], n)
		if err != nil {
			t.Fatal(err)
		}
		if got := classes(inv); !slices.Equal(got, []string{rc}) {
			t.Errorf("node provider %s offers %v, want %s alone", n, got, rc)
		}
	}

	checkSharedSegment(t, c, shared, vmOnly, isVM, got)
	checkPlacementReadOnly(t, c)
}

func equalAllocs(a, b map[string]map[string]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]int64) bool { return maps.Equal(x, y) })
}

// checkSharedSegment: GET /v1/networks shows the VMs and the bare-metal
// servers of the shared network in one segment, each as its kind.
func checkSharedSegment(t *testing.T, c *e2e.Cluster, shared, vmOnly string, isVM map[string]bool, got map[string]serverView) {
	t.Helper()
	var body struct {
		Networks []wire.NetworkView `json:"networks"`
	}
	if err := get(c.Agents[3], "/v1/networks", &body); err != nil {
		t.Fatal(err)
	}
	byID := map[string]wire.NetworkView{}
	for _, n := range body.Networks {
		byID[n.ID] = n
	}
	net, ok := byID[shared]
	if !ok {
		t.Fatalf("network %s is not listed: %+v", shared, body.Networks)
	}
	if other := byID[vmOnly]; other.Segment == net.Segment || other.Segment == "" {
		t.Errorf("networks %s and %s share segment %q", shared, vmOnly, net.Segment)
	}
	seen := map[string]bool{}
	for _, m := range net.Members {
		s := got[m.ServerID]
		seen[m.ServerID] = true
		switch {
		case isVM[m.ServerID] && (m.Kind != fsm.KindHypervisor || m.Node != ""):
			t.Errorf("VM %s on segment %s as %+v", s.Name, net.Segment, m)
		case !isVM[m.ServerID] && (m.Kind != fsm.KindIronic || m.Node != s.Node):
			t.Errorf("bare-metal server %s on segment %s as %+v (node %s)", s.Name, net.Segment, m, s.Node)
		}
		if m.VIF == "" || m.Host != s.Host {
			t.Errorf("member %+v of segment %s: want a VIF and host %s", m, net.Segment, s.Host)
		}
	}
	for id, s := range got {
		if !seen[id] {
			t.Errorf("server %s is missing from segment %s", s.Name, net.Segment)
		}
	}
}

// checkPlacementReadOnly: writes to /placement are refused with
// Placement's JSON error shape.
func checkPlacementReadOnly(t *testing.T, c *e2e.Cluster) {
	t.Helper()
	for _, w := range []struct{ method, path string }{
		{http.MethodPost, "/placement/resource_providers"},
		{http.MethodPut, "/placement/resource_providers/" + fsm.HostProviderUUID(c.Agents[0].Name) + "/inventories"},
	} {
		status, raw, err := rawRequest(c, c.Agents[4], w.method, w.path,
			map[string]any{"name": "intruder", "inventories": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Errors []struct {
				Status int    `json:"status"`
				Code   string `json:"code"`
				Detail string `json:"detail"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || status != http.StatusForbidden || len(body.Errors) != 1 ||
			body.Errors[0].Status != http.StatusForbidden || body.Errors[0].Code != "placement.corral_owned" || body.Errors[0].Detail == "" {
			t.Errorf("%s %s: %d %s, want 403 with Placement's error shape and code placement.corral_owned", w.method, w.path, status, raw)
		}
	}
	var provs struct {
		Providers []map[string]any `json:"resource_providers"`
	}
	if err := get(c.Agents[0], "/placement/resource_providers?name=intruder", &provs); err != nil || len(provs.Providers) != 0 {
		t.Errorf("after refused writes: providers named intruder %v (%v)", provs.Providers, err)
	}
}
