package upgrade

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
)

const free, deployed = 3, 3

// simIronic is a simulator whose manage step takes a while, so that a
// migration can be killed half-way.
func simIronic(t *testing.T) *e2e.Ironic {
	return e2e.SimIronic(t, sim.Options{ManageDelay: 300 * time.Millisecond})
}

func TestUpgradeSQLiteSimulator(t *testing.T) {
	ir := simIronic(t)
	salt := randomSalt(t)
	upgrade(t, ir, salt, sqliteDB(t, novabmtest.Salted(salt, free, deployed)))
}

func TestUpgradeMariaDBSimulator(t *testing.T) {
	salt := randomSalt(t)
	db := mariaDB(t, novabmtest.Salted(salt, free, deployed), salt)
	upgrade(t, simIronic(t), salt, db)
}

func TestUpgradeSQLiteRealIronic(t *testing.T) {
	ir := e2e.RealIronic(t)
	salt := randomSalt(t)
	upgrade(t, ir, salt, sqliteDB(t, novabmtest.Salted(salt, free, deployed)))
}

func TestUpgradeMariaDBRealIronic(t *testing.T) {
	ir := e2e.RealIronic(t)
	salt := randomSalt(t)
	upgrade(t, ir, salt, mariaDB(t, novabmtest.Salted(salt, free, deployed), salt))
}

// upgrade is the whole operator path of docs/upgrade-from-nova-baremetal.md
// against one Ironic and one pair of old databases.
func upgrade(t *testing.T, ir *e2e.Ironic, salt int, db oldDB) {
	ctx := context.Background()
	rc := ir.Class("bm")
	var nodes, freeNodes []string
	for i := 1; i <= free+deployed; i++ {
		nodes = append(nodes, novabmtest.SaltedNodeUUID(salt, i))
		if i <= free {
			freeNodes = append(freeNodes, novabmtest.SaltedNodeUUID(salt, i))
		}
	}
	var instances []string
	for k := 1; k <= deployed; k++ {
		instances = append(instances, novabmtest.SaltedInstanceUUID(salt, k))
	}
	cleanupIronic(t, ir, nodes)
	irc := ironicClient(t, ir)
	c := e2e.IronicCluster(t, 3, ir)
	a := c.Agents[0]
	sum := db.checksum(t)
	// The commands are the operator doc's, as written; the test sets only
	// its variables, its own resource class, the simulator's driver and
	// how long to wait for the node mirror.
	vars := map[string]string{"NOVA_BM_DB": db.bmURL, "NOVA_DB": db.nova, "IRONIC_URL": ir.URL,
		"KERNEL": newKernel, "RAMDISK": newRamdisk}
	migrate := docCommand(t, "### 8. Migrate", vars,
		map[string]string{"--resource-class": rc, "--driver": "fake-hardware", "--mirror-timeout": "90s"})
	flavorUpdate := docCommand(t, "### 7. Update the flavors", vars, map[string]string{"--resource-class": rc})

	// Step: update the flavors (importing nova's), then again: nothing to do.
	r := cli(t, c, a, flavorUpdate...)
	if r.code != 0 {
		t.Fatalf("flavor update: %s", r)
	}
	r = cli(t, c, a, flavorUpdate...)
	if r.code != 0 {
		t.Fatalf("second flavor update: %s", r)
	}
	mustContain(t, r, "nothing to do")

	// Step: the dry run prints the plan and changes nothing.
	r = cli(t, c, a, append(migrate, "--dry-run")...)
	if r.code != 0 {
		t.Fatalf("dry run: %s", r)
	}
	mustContain(t, r, fmt.Sprintf("%d nodes (%d deployed) would be migrated", free+deployed, deployed), "nothing was changed")
	if got := ours(t, irc, nodes); len(got) != 0 {
		t.Fatalf("the dry run enrolled nodes: %v", got)
	}

	// Step: the migration, killed half-way, then run again.
	cmd, _, _ := startCLI(t, c, a, migrate...)
	testkit.Eventually(t, 60*time.Second, func() error {
		if n := len(ours(t, irc, nodes)); n < 2 {
			return fmt.Errorf("%d nodes enrolled so far", n)
		}
		return nil
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	half := ours(t, irc, nodes)
	done := 0
	for _, line := range half {
		if strings.Contains(line, " available ") || strings.Contains(line, " active ") && !strings.Contains(line, "alloc= ") && !strings.HasSuffix(line, "alloc=") {
			done++
		}
	}
	if done == len(nodes) {
		t.Fatalf("the migration was complete before it was killed: the rerun would test nothing:\n%s", strings.Join(half, "\n"))
	}
	t.Logf("killed with %d of %d nodes enrolled, %d finished in Ironic", len(half), len(nodes), done)
	r = cli(t, c, a, migrate...)
	if r.code != 0 {
		t.Fatalf("migration after the kill: %s", r)
	}
	after := ours(t, irc, nodes)
	r = cli(t, c, a, migrate...)
	if r.code != 0 {
		t.Fatalf("third run: %s", r)
	}
	mustContain(t, r, "nothing to do")
	if got := ours(t, irc, nodes); !reflect.DeepEqual(got, after) {
		t.Fatalf("the third run changed Ironic:\n%v\n%v", after, got)
	}
	if db.checksum(t) != sum {
		t.Fatal("the migration changed the old databases")
	}

	// Every old instance is an ACTIVE server on its original node; Ironic agrees.
	cl := e2e.Compute(a)
	cl.Microversion = "2.47"
	for k, id := range instances {
		node := novabmtest.SaltedNodeUUID(salt, free+k+1)
		s, err := servers.Get(ctx, cl, id).Extract()
		if err != nil {
			t.Fatalf("server %s: %v", id, err)
		}
		if s.Status != "ACTIVE" || s.Name != fmt.Sprintf("db-%d", k+1) || s.Flavor["original_name"] != "baremetal.small" {
			t.Fatalf("server %s: status %s name %s flavor %v", id, s.Status, s.Name, s.Flavor)
		}
		o, err := owner(ctx, a, id)
		if err != nil || o.Node != node || o.Status != "ACTIVE" || o.Host == "" {
			t.Fatalf("owner of %s: %+v, %v (want node %s)", id, o, err, node)
		}
		n, err := irc.GetNode(ctx, node)
		if err != nil || n.ProvisionState != ironic.StateActive || n.InstanceUUID != id || n.AllocationUUID != id {
			t.Fatalf("Ironic node %s: %+v, %v", node, n, err)
		}
		al, err := irc.GetAllocation(ctx, id)
		if err != nil || al.NodeUUID != node || al.State != ironic.AllocationActive {
			t.Fatalf("allocation %s: %+v, %v", id, al, err)
		}
	}
	for _, u := range freeNodes {
		n, err := irc.GetNode(ctx, u)
		if err != nil || n.ProvisionState != ironic.StateAvailable || n.InstanceUUID != "" || n.PowerState == "" {
			t.Fatalf("free node %s: %+v, %v", u, n, err)
		}
		ports, err := irc.ListPorts(ctx, u)
		if err != nil || len(ports) != 2 {
			t.Fatalf("ports of %s: %+v, %v", u, ports, err)
		}
	}
	// One port per MAC, nothing twice.
	if all, err := irc.ListPorts(ctx, ""); err == nil {
		seen := map[string]bool{}
		for _, p := range all {
			if seen[p.Address] {
				t.Fatalf("MAC %s is on two ports", p.Address)
			}
			seen[p.Address] = true
		}
	}

	// A new boot lands on a free migrated node.
	e2e.AwaitNodes(t, a, freeNodes, 60*time.Second)
	newID, err := e2e.Boot(ctx, cl, "after-upgrade", novabmtest.FlavorBM)
	if err != nil {
		t.Fatal(err)
	}
	got := e2e.WaitServers(t, cl, []string{newID}, 90*time.Second, e2e.Settled)[newID]
	if got.Status != "ACTIVE" {
		msg, _ := e2e.FaultOf(got)
		t.Fatalf("new server: %s %s", got.Status, msg)
	}
	if o, err := owner(ctx, a, newID); err != nil || !slices.Contains(freeNodes, o.Node) {
		t.Fatalf("new server landed on %q (%v), want one of the free migrated nodes %v", o.Node, err, freeNodes)
	}

	// Deleting a migrated server undeploys and frees its node.
	gone, goneNode := instances[0], novabmtest.SaltedNodeUUID(salt, free+1)
	if err := servers.Delete(ctx, cl, gone).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e2e.WaitGone(t, cl, []string{gone}, 90*time.Second)
	testkit.Eventually(t, 60*time.Second, func() error {
		n, err := irc.GetNode(ctx, goneNode)
		if err != nil {
			return err
		}
		if n.ProvisionState != ironic.StateAvailable || n.InstanceUUID != "" || n.AllocationUUID != "" {
			return fmt.Errorf("node %s is %s inst=%q alloc=%q", goneNode, n.ProvisionState, n.InstanceUUID, n.AllocationUUID)
		}
		return nil
	})
	if _, err := irc.GetAllocation(ctx, gone); !errors.Is(err, ironic.ErrNotFound) {
		t.Fatalf("the deleted server's allocation: %v", err)
	}

	// Killing the host that owns migrated servers hands them to a live host.
	rest := instances[1:]
	owners := map[string]int{}
	for _, id := range rest {
		o, err := owner(ctx, a, id)
		if err != nil {
			t.Fatal(err)
		}
		owners[o.Host]++
	}
	var victim *e2e.Agent
	for _, ag := range c.Agents {
		if owners[ag.Name] > 0 && (victim == nil || owners[ag.Name] > owners[victim.Name]) {
			victim = ag
		}
	}
	var watcher *e2e.Agent
	for _, ag := range c.Agents {
		if ag != victim {
			watcher = ag
			break
		}
	}
	victim.Kill()
	testkit.Eventually(t, 90*time.Second, func() error {
		for _, id := range rest {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			o, err := owner(cctx, watcher, id)
			cancel()
			if err != nil {
				return err
			}
			if o.Host == victim.Name || o.Status != "ACTIVE" {
				return fmt.Errorf("server %s: owner %s, %s", id, o.Host, o.Status)
			}
		}
		return nil
	})
	for k, id := range rest {
		n, err := irc.GetNode(ctx, novabmtest.SaltedNodeUUID(salt, free+k+2))
		if err != nil || n.ProvisionState != ironic.StateActive || n.InstanceUUID != id {
			t.Fatalf("after the owner's death, node of %s: %+v, %v", id, n, err)
		}
	}
	// The read-only proxy lists every node.
	checkProxy(t, c, watcher, nodes)
}

// checkProxy reads GET /compute/v2.1/os-baremetal-nodes as an admin.
func checkProxy(t *testing.T, c *e2e.Cluster, a *e2e.Agent, nodes []string) {
	t.Helper()
	var body struct {
		Nodes []struct {
			ID         string `json:"id"`
			Host       string `json:"host"`
			TaskState  string `json:"task_state"`
			CPUs       int    `json:"cpus"`
			Interfaces []struct {
				Address string `json:"address"`
			} `json:"interfaces"`
		} `json:"nodes"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Client().Do(ctx, http.MethodGet, "/compute/v2.1/os-baremetal-nodes", nil, &body); err != nil {
		t.Fatalf("os-baremetal-nodes: %v", err)
	}
	listed := map[string]bool{}
	for _, n := range body.Nodes {
		if slices.Contains(nodes, n.ID) {
			if n.Host != "IRONIC MANAGED" || n.CPUs != 16 || len(n.Interfaces) != 2 || n.TaskState == "" {
				t.Fatalf("proxy shows %+v", n)
			}
			listed[n.ID] = true
		}
	}
	if len(listed) != len(nodes) {
		t.Fatalf("the proxy lists %d of the %d migrated nodes", len(listed), len(nodes))
	}
	var one map[string]any
	err := a.Client().Do(ctx, http.MethodPost, "/compute/v2.1/os-baremetal-nodes", map[string]any{"node": map[string]any{}}, &one)
	if !isStatus(err, http.StatusNotFound) {
		t.Fatalf("POST os-baremetal-nodes: %v, want 404", err)
	}
}

func isStatus(err error, code int) bool {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return e.Actual == code
	}
	return err != nil && strings.Contains(err.Error(), fmt.Sprint(code))
}

// Each bad input gets its exit code and message and changes nothing:
// neither the databases, nor Ironic, nor corral.
func TestUpgradeBadInputs(t *testing.T) {
	ir := simIronic(t)
	salt := randomSalt(t)
	good := sqliteDB(t, novabmtest.Salted(salt, 1, 1))

	noCol := novabmtest.Salted(salt, 1, 1)
	noCol.DropColumn = "bm_nodes.pm_address"
	missingCol := sqliteDB(t, noCol)

	bad := novabmtest.Salted(salt^0x5a5a, 4, 0)
	bad.Nodes[0].PMAddress = ""                             // no pm_address
	bad.Nodes[2].Ifaces[0].MAC = bad.Nodes[1].Ifaces[0].MAC // duplicate MAC on nodes 2 and 3
	bad.Nodes = append(bad.Nodes[:3], bad.Nodes[4:]...)     // keep nodes 1-3 and the soft-deleted one
	bad.Instances = append(bad.Instances, novabmtest.Instance{UUID: novabmtest.SaltedInstanceUUID(salt^0x5a5a, 77),
		Name: "orphan", Host: novabmtest.ComputeHost, Node: novabmtest.SaltedNodeUUID(salt^0x5a5a, 4242), VMState: "active",
		ImageRef: "img", TypeID: 1, Project: "p", User: "u"}) // its node row is gone
	badRows := sqliteDB(t, bad)

	c := e2e.IronicCluster(t, 3, ir)
	a := c.Agents[0]
	irc := ironicClient(t, ir)
	before := func() (int, int) {
		ns, err := irc.ListNodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Servers []map[string]any `json:"servers"`
		}
		if err := a.Client().Do(context.Background(), http.MethodGet, "/compute/v2.1/servers", nil, &list); err != nil {
			t.Fatal(err)
		}
		return len(ns), len(list.Servers)
	}
	n0, s0 := before()
	sums := []string{good.checksum(t), missingCol.checksum(t), badRows.checksum(t)}
	missingFile := filepath.Join(t.TempDir(), "nope.sqlite")
	base := []string{"manage", "baremetal-migrate", "--driver", "fake-hardware", "--ironic-url", ir.URL, "--mirror-timeout", "5s"}
	cases := []struct {
		name  string
		args  []string
		code  int
		frags []string
	}{
		{"missing column", []string{"--nova-bm-db", missingCol.bmURL, "--nova-db", missingCol.nova}, 2, []string{"bm_nodes", "pm_address"}},
		{"missing table", []string{"--nova-bm-db", good.nova, "--nova-db", good.nova}, 2, []string{"no table bm_nodes"}},
		{"bad URL", []string{"--nova-bm-db", "postgresql://u:pw@127.0.0.1/nova_bm", "--nova-db", good.nova}, 2, []string{"not supported"}},
		{"missing file", []string{"--nova-bm-db", "sqlite:///" + missingFile, "--nova-db", good.nova}, 2, []string{"does not exist"}},
		{"no database", []string{"--nova-db", good.nova}, 2, []string{"--nova-bm-db"}},
		{"rows that cannot be migrated", []string{"--nova-bm-db", badRows.bmURL, "--nova-db", badRows.nova}, 1,
			[]string{"no pm_address", "duplicate MAC", "node row is gone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, c, a, append(slices.Clone(base), tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("want exit %d: %s", tc.code, r)
			}
			mustContain(t, r, tc.frags...)
		})
	}
	r := cli(t, c, a, "manage", "baremetal-migrate", "--nova-bm-db", good.bmURL, "--nova-db", good.nova)
	if r.code != 2 {
		t.Fatalf("no Ironic given: %s", r)
	}
	mustContain(t, r, "--ironic-url")
	r = cli(t, c, a, "manage", "baremetal-flavor-update", "--all", "--deploy-kernel", "k")
	if r.code != 2 {
		t.Fatalf("flavor update without a ramdisk: %s", r)
	}
	if _, err := os.Stat(missingFile); err == nil {
		t.Fatal("a missing SQLite file was created")
	}
	if n, s := before(); n != n0 || s != s0 {
		t.Fatalf("bad inputs changed Ironic (%d → %d nodes) or corral (%d → %d servers)", n0, n, s0, s)
	}
	for i, o := range []oldDB{good, missingCol, badRows} {
		if o.checksum(t) != sums[i] {
			t.Fatalf("database %d changed", i)
		}
	}
}
