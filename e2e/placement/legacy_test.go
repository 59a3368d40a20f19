package placement_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// TestLegacyHazard reproduces the legacy hazard of nodes that report the
// standard classes and fixes it as an operator would: turn the legacy
// option off (the refusal is recorded and logged once), run the flavor
// migration, and the node offers its custom class alone again.
func TestLegacyHazard(t *testing.T) {
	skipShort(t)
	t.Run("sim", func(t *testing.T) {
		testLegacyHazard(t, e2e.SimIronic(t, sim.Options{DeployDelay: 100 * time.Millisecond}))
	})
	t.Run("real", func(t *testing.T) {
		testLegacyHazard(t, e2e.RealIronic(t))
	})
}

func testLegacyHazard(t *testing.T, ir *e2e.Ironic) {
	class := ir.Class("legacy")
	rc := fsm.NormalizeResourceClass(class)
	nodeIDs := ir.EnrollNodes(t, 2, class)
	// No hypervisor host: a VM finds room nowhere but on a node.
	c := startCloud(t, ir, cloudSpec{Ironics: 3, BaseIP: 60, Env: []string{legacyEnv + "=true"}})
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 60*time.Second)
	standard := []string{"DISK_GB", "MEMORY_MB", "VCPU"}
	legacyClasses := slices.Sorted(slices.Values(append([]string{rc}, standard...)))
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, n := range nodeIDs {
			inv, err := inventories(c.Agents[1], n)
			if err != nil {
				return err
			}
			if got := classes(inv); !slices.Equal(got, legacyClasses) || inv["VCPU"].Total != nodeCPUs || inv["VCPU"].Reserved != 0 {
				return fmt.Errorf("node provider %s offers %v, want %v from its properties", n, inv, legacyClasses)
			}
		}
		return nil
	})

	// An old-style bare-metal flavor: the node's class, standard classes
	// not zeroed (sized like the nodes, as such flavors were).
	old := createFlavor(t, c, c.Agents[0], "bm-old", nodeCPUs, nodeRAM, nodeDisk, map[string]string{"resources:" + rc: "1"})
	vm := createFlavor(t, c, c.Agents[1], "vm-tiny", 1, 1024, 1, nil)

	first := boot(t, c, c.Agents[2], "old-1", old)
	s := active(t, c, 90*time.Second, first)[first]
	want := map[string]map[string]int64{s.Node: {rc: 1, "VCPU": nodeCPUs, "MEMORY_MB": nodeRAM, "DISK_GB": nodeDisk}}
	if got, err := allocations(c.Agents[0], first); err != nil || !equalAllocs(got, want) {
		t.Fatalf("old-style server allocations %v (%v), want %v", got, err, want)
	}
	deleteServers(t, c, 90*time.Second, first)
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 60*time.Second)

	// The hazard: the node's standard inventory is free again, and a VM
	// flavor is scheduled onto the node provider, hence to an ironic host.
	// (corral's Ironic driver then refuses to deploy a flavor without a
	// custom class, which releases the claim.)
	hazard := boot(t, c, c.Agents[1], "vm-hazard", vm)
	if got, err := allocations(c.Agents[1], hazard); err == nil && len(got) > 0 {
		for prov, res := range got {
			if !slices.Contains(nodeIDs, prov) || !maps.Equal(res, map[string]int64{"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1}) {
				t.Errorf("VM claim %v, want its standard classes on one of the nodes %v", got, nodeIDs)
			}
		}
	} else {
		t.Logf("the VM's claim was already released (%v): judging by its host and fault", err)
	}
	hs := settle(t, c, 60*time.Second, hazard)[hazard]
	kinds, err := hostKinds(c.Agents[0])
	if err != nil {
		t.Fatal(err)
	}
	if kinds[hs.Host] != fsm.KindIronic || strings.Contains(hs.fault(), "not enough hosts") {
		t.Fatalf("with legacy inventory a VM went to host %q (%s), fault %q: want a node provider, hence an ironic host",
			hs.Host, kinds[hs.Host], hs.fault())
	}
	t.Logf("the hazard: VM %s scheduled onto a bare-metal node, owned by ironic host %s (%s: %s)", hazard, hs.Host, hs.Status, hs.fault())
	deleteServers(t, c, 60*time.Second, hazard)

	// An old-style server again, then the option goes off everywhere.
	second := boot(t, c, c.Agents[0], "old-2", old)
	node := active(t, c, 90*time.Second, second)[second].Node
	other := nodeIDs[0]
	if other == node {
		other = nodeIDs[1]
	}
	passedOnce := rollingRestart(t, c, legacyEnv+"=false")

	testkit.Eventually(t, 30*time.Second, func() error {
		ns, err := nodes(c.Agents[2])
		if err != nil {
			return err
		}
		if ns[node].InventoryConflict == "" || ns[other].InventoryConflict != "" {
			return fmt.Errorf("inventory_conflict: %q on %s (in use), %q on %s (free): want one on the node in use only",
				ns[node].InventoryConflict, node, ns[other].InventoryConflict, other)
		}
		inv, err := inventories(c.Agents[2], other)
		if err != nil {
			return err
		}
		if got := classes(inv); !slices.Equal(got, []string{rc}) {
			return fmt.Errorf("free node %s still offers %v", other, got)
		}
		return nil
	})
	// Refused at every sync, logged once: a few more syncs add no line.
	// (Each time leadership passes from an agent with the option on to
	// one with it off, the conflict is new again: with an election while
	// the followers restarted, only the absence of a flood is checked.)
	refusals := logLines(t, c, refusalMsg, `"node":"`+node+`"`)
	awaitSyncs(t, c, 3)
	if n := logLines(t, c, refusalMsg, `"node":"`+node+`"`); n != refusals || n == 0 || passedOnce && n != 1 {
		t.Errorf("the refusal for node %s is logged %d times (%d before 3 more syncs), want once", node, n, refusals)
	}
	// The Ironic may be shared with other suites: count this test's nodes.
	if n := ownRefusals(t, c, nodeIDs); n != refusals {
		t.Errorf("%d refusals logged for this test's nodes, want %d, for node %s alone", n, refusals, node)
	}
	ns, err := nodes(c.Agents[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s: inventory_conflict %q", node, ns[node].InventoryConflict)
	if inv, err := inventories(c.Agents[0], node); err != nil || inv["VCPU"].Total != nodeCPUs {
		t.Fatalf("node %s inventory %v (%v): want its VCPU kept while in use", node, inv, err)
	}

	// The fix.
	if code, out := migrate(t, c, c.Agents[1], "--resource-class", class, "--all"); code != 0 {
		t.Fatalf("migration: exit %d\n%s", code, out)
	}
	ms, err := getServer(c, c.Agents[2], second)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range goldSpecs(rc) {
		if ms.Flavor.ExtraSpecs[k] != v {
			t.Errorf("embedded flavor of %s after the migration: %v, want %s=%s", second, ms.Flavor.ExtraSpecs, k, v)
		}
	}
	if ms.Flavor.VCPUs != nodeCPUs || ms.Flavor.OriginalName != "bm-old" {
		t.Errorf("embedded flavor of %s lost its sizes or name: %+v", second, ms.Flavor)
	}
	if got, err := allocations(c.Agents[0], second); err != nil || !equalAllocs(got, map[string]map[string]int64{node: {rc: 1}}) {
		t.Errorf("allocations after the migration %v (%v), want %s=1 on %s alone", got, err, rc, node)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		ns, err := nodes(c.Agents[1])
		if err != nil {
			return err
		}
		inv, err := inventories(c.Agents[1], node)
		if err != nil {
			return err
		}
		if got := classes(inv); ns[node].InventoryConflict != "" || !slices.Equal(got, []string{rc}) {
			return fmt.Errorf("node %s: conflict %q, inventory %v", node, ns[node].InventoryConflict, got)
		}
		return nil
	})

	// No node offers VCPU any more: with no hypervisor room, a VM finds
	// no valid host.
	late := boot(t, c, c.Agents[2], "vm-late", vm)
	ls := settle(t, c, 30*time.Second, late)[late]
	if ls.Status != "ERROR" || ls.Host != "" || !strings.Contains(ls.fault(), "No valid host") {
		t.Errorf("VM after the fix: %s on %q, fault %q: want ERROR with No valid host", ls.Status, ls.Host, ls.fault())
	}
	if n := ownRefusals(t, c, nodeIDs); n != refusals {
		t.Errorf("%d refusals logged for this test's nodes by the end, want %d", n, refusals)
	}
}

// ownRefusals counts the refusals logged for the given nodes.
func ownRefusals(t *testing.T, c *e2e.Cluster, nodes []string) int {
	t.Helper()
	n := 0
	for _, id := range nodes {
		n += logLines(t, c, refusalMsg, `"node":"`+id+`"`)
	}
	return n
}
