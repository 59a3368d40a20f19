package placement_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/sim"
)

// TestFlavorMigrationExitCodes checks `corral manage
// ironic-flavor-migration` as an operator scripts it: nova-manage's exit
// codes, a dry run that changes nothing, a scope of one node, and a
// second run that is a no-op.
//
// Exit code 2 (more than one server on a node) cannot be produced through
// corral: Apply refuses a second server on a node (one server per node,
// one node per server), so the API's 409 that maps to it is only a guard.
// It is not faked here.
func TestFlavorMigrationExitCodes(t *testing.T) {
	skipShort(t)
	ir := e2e.SimIronic(t, sim.Options{DeployDelay: 100 * time.Millisecond})
	class := ir.Class("exitcodes")
	rc := fsm.NormalizeResourceClass(class)
	nodeIDs := ir.EnrollNodes(t, 2, class)
	c := startCloud(t, ir, cloudSpec{Ironics: 3, BaseIP: 60, Env: []string{legacyEnv + "=true"}})
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 60*time.Second)
	old := createFlavor(t, c, c.Agents[0], "bm-old", nodeCPUs, nodeRAM, nodeDisk, map[string]string{"resources:" + rc: "1"})
	ids := []string{boot(t, c, c.Agents[1], "old-a", old), boot(t, c, c.Agents[2], "old-b", old)}
	servers := active(t, c, 90*time.Second, ids...)
	a := c.Agents[1]

	// snapshot is every server's embedded flavor and allocations.
	type state struct {
		specs  map[string]string
		allocs map[string]map[string]int64
	}
	snapshot := func() map[string]state {
		t.Helper()
		out := map[string]state{}
		for _, id := range ids {
			s, err := getServer(c, a, id)
			if err != nil {
				t.Fatal(err)
			}
			al, err := allocations(a, id)
			if err != nil {
				t.Fatal(err)
			}
			out[id] = state{s.Flavor.ExtraSpecs, al}
		}
		return out
	}
	migrated := func(st state) bool {
		for k, v := range goldSpecs(rc) {
			if st.specs[k] != v {
				return false
			}
		}
		al := st.allocs[firstKey(st.allocs)]
		return len(st.allocs) == 1 && len(al) == 1 && al[rc] == 1
	}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out := migrate(t, c, a, args...)
		if code != want {
			t.Fatalf("ironic-flavor-migration %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		return out
	}
	before := snapshot()
	for id, st := range before {
		if migrated(st) {
			t.Fatalf("server %s starts migrated: %+v", id, st)
		}
	}

	// Bad arguments: 3, and nothing changes.
	run(3, "--resource-class", class, "--all", "--host", servers[ids[0]].Host)
	run(3, "--resource-class", class, "--node", servers[ids[0]].Node)
	run(3, "--all")
	run(3, "--resource-class", class)
	run(3, "--resource-class", class, "--all", "--batch-size", "0")
	// Nothing in scope: 1.
	run(1, "--resource-class", ir.Class("nobody"), "--all")
	run(1, "--resource-class", class, "--host", "no-such-host")
	// The dry run lists both servers and changes nothing.
	out := run(0, "--resource-class", class, "--all", "--dry-run")
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("dry run does not list server %s:\n%s", id, out)
		}
	}
	if !strings.Contains(out, "2 of 2 servers would be migrated") {
		t.Errorf("dry run output:\n%s", out)
	}
	if now := snapshot(); !reflect.DeepEqual(now, before) {
		t.Fatalf("refused runs or the dry run changed servers:\nbefore %+v\nafter  %+v", before, now)
	}

	// One node only (its owner host), with the Placement spelling of the
	// class.
	one := servers[ids[0]]
	run(0, "--resource-class", rc, "--host", one.Host, "--node", one.Node)
	mid := snapshot()
	if !migrated(mid[ids[0]]) || !reflect.DeepEqual(mid[ids[1]], before[ids[1]]) {
		t.Fatalf("after migrating node %s only: %+v", one.Node, mid)
	}
	if want := map[string]map[string]int64{one.Node: {rc: 1}}; !equalAllocs(mid[ids[0]].allocs, want) {
		t.Errorf("server %s allocations %v, want %v", ids[0], mid[ids[0]].allocs, want)
	}

	// The rest, then again: the second run finds nothing to do.
	out = run(0, "--resource-class", class, "--all")
	if !strings.Contains(out, "migrated 1 servers") || !strings.Contains(out, "1 already were") {
		t.Errorf("migration output:\n%s", out)
	}
	after := snapshot()
	for id, st := range after {
		if !migrated(st) {
			t.Errorf("server %s not migrated: %+v", id, st)
		}
	}
	out = run(0, "--resource-class", class, "--all")
	if !strings.Contains(out, "migrated 0 servers") {
		t.Errorf("second migration output:\n%s", out)
	}
	if again := snapshot(); !reflect.DeepEqual(again, after) {
		t.Errorf("the second run changed servers:\nbefore %+v\nafter  %+v", after, again)
	}
	out = run(0, "--resource-class", class, "--all", "--dry-run")
	if !strings.Contains(out, "0 of 2 servers would be migrated") {
		t.Errorf("dry run after the migration:\n%s", out)
	}
}

func firstKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}
