package security

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

func raftOf(t *testing.T, a *e2e.Agent) e2e.RaftStatus {
	t.Helper()
	ctx, cancel := ctx10()
	defer cancel()
	st, err := a.Raft(ctx)
	if err != nil {
		t.Fatalf("raft status of %s: %v", a.Name, err)
	}
	return st
}

func sorted(xs []string) []string {
	xs = slices.Clone(xs)
	sort.Strings(xs)
	return xs
}

// TestDeadVoterReplaced: three voters (max 3) and a fourth peer as a
// non-voter; a voter killed for good is removed after
// dead_server_cleanup_after and the non-voter promoted; the cluster then
// survives the loss of another voter.
func TestDeadVoterReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	env := []string{"CORRAL_RAFT_DEAD_SERVER_CLEANUP_AFTER=3s"}
	c := e2e.Start(t, 3, e2e.Options{ExtraArgs: []string{"--max-voters", "3"}, Env: env})
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	four := e2e.StartWith(t, 1, e2e.Options{BaseIP: 5, Env: env, ExtraArgs: []string{"--max-voters", "3", "--join", c.Agents[0].GossipAddr()}},
		func(_ int, a *e2e.Agent) { a.Name = "peer4" })
	testkit.Eventually(t, 30*time.Second, func() error {
		if st := raftOf(t, leader); !slices.Equal(st.Nonvoters, []string{"peer4"}) {
			return fmt.Errorf("non-voters %v", st.Nonvoters)
		}
		return nil
	})
	if err := createFlavor(leader, "before"); err != nil {
		t.Fatal(err)
	}
	var victim *e2e.Agent
	for _, a := range c.Agents {
		if a != leader {
			victim = a
			break
		}
	}
	victim.Kill()
	testkit.Eventually(t, 30*time.Second, func() error {
		st := raftOf(t, c.Leader(15*time.Second))
		if v := sorted(st.Voters); slices.Contains(v, victim.Name) || !slices.Contains(v, "peer4") || len(v) != 3 {
			return fmt.Errorf("voters %v non-voters %v", st.Voters, st.Nonvoters)
		}
		return nil
	})
	// Another voter (not the leader) dies: two of three remain.
	l := c.Leader(15 * time.Second)
	for _, a := range c.Agents {
		if a != l && a != victim {
			a.Kill()
			break
		}
	}
	all := append(slices.Clone(c.Agents), four.Agents...)
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, a := range all {
			if a.Running() {
				if err := createFlavor(a, "after-"+a.Name); err != nil {
					return err
				}
			}
		}
		return nil
	})
	fl, err := flavorNames(four.Agents[0])
	if err != nil || !slices.Contains(fl, "before") {
		t.Fatalf("flavors on peer4: %v %v", fl, err)
	}
}

// TestWipedDataDirRejoinsAsNonVoter: a follower restarted under its name
// on an empty data dir is a non-voter until it has caught up, then a
// voter again with all the state.
func TestWipedDataDirRejoinsAsNonVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := e2e.Start(t, 3, e2e.Options{})
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	for i := range 20 {
		if err := createFlavor(leader, fmt.Sprintf("w%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var victim *e2e.Agent
	for _, a := range c.Agents {
		if a != leader {
			victim = a
			break
		}
	}
	victim.Kill()
	if err := os.RemoveAll(victim.DataDir); err != nil {
		t.Fatal(err)
	}
	victim.Start()
	// The leader made it a non-voter, it caught up, and it is a voter
	// again with every write.
	testkit.Eventually(t, 45*time.Second, func() error {
		st, err := leader.Raft(context.Background())
		if err != nil {
			return err
		}
		if !slices.Contains(st.Voters, victim.Name) {
			return fmt.Errorf("voters %v non-voters %v", st.Voters, st.Nonvoters)
		}
		if v, err := metric(leader, "corral_raft_catchup_nonvoters_total"); err != nil || v < 1 {
			return fmt.Errorf("leader's catch-up non-voters %v: %v", v, err)
		}
		if v, err := metric(victim, "corral_raft_caught_up_total"); err != nil || v != 1 {
			return fmt.Errorf("caught-up counter of %s: %v %v", victim.Name, v, err)
		}
		return nil
	})
	fl, err := flavorNames(victim)
	if err != nil || !slices.Contains(fl, "w19") {
		t.Fatalf("%s flavors %v: %v", victim.Name, fl, err)
	}
	// The others never had to catch up.
	for _, a := range c.Agents {
		if a != victim {
			if v, err := metric(a, "corral_raft_caught_up_total"); err != nil || v != 0 {
				t.Fatalf("caught-up counter of %s: %v %v", a.Name, v, err)
			}
		}
	}
}

// TestSnapshotRestoreIntoNewCluster: servers, reservations and flavors of
// a cluster saved with `corral snapshot save` are all back, and agree with
// Ironic, after the cluster is destroyed and the file restored into a new
// one; `corral snapshot inspect` shows what the file holds.
func TestSnapshotRestoreIntoNewCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	ir := e2e.SimIronic(t, sim.Options{DeployDelay: 50 * time.Millisecond, UndeployDelay: 50 * time.Millisecond})
	class := ir.Class("gold")
	nodeIDs := ir.EnrollNodes(t, 6, class)
	c := e2e.IronicCluster(t, 3, ir)
	e2e.AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := e2e.BareMetalFlavor(t, c.Agents[1], "bm-gold", class)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ids []string
	for i := range 4 {
		id, err := e2e.Boot(ctx, e2e.Compute(c.Agents[i%3]), fmt.Sprintf("snap-%d", i), flavor)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	before := e2e.WaitServers(t, e2e.Compute(c.Agents[0]), ids, 90*time.Second, e2e.Settled)
	resBefore, err := e2e.Reservations(ctx, c.Agents[0])
	if err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/corral.snap"
	if out, err := corral(t, bin, c.Agents[2], c.Token, "snapshot", "save", file); err != nil {
		t.Fatal(err)
	} else {
		t.Log(out)
	}
	if out, err := corral(t, bin, c.Agents[0], c.Token, "snapshot", "inspect", file, "-f", "json"); err != nil || !containsAll(out, `"servers": 4`, `"flavors": 1`) {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	// Destroy the cluster; start a new one (new data dirs, new ports).
	c.StopAll()
	n := e2e.IronicCluster(t, 3, ir)
	if out, err := corral(t, bin, n.Agents[1], n.Token, "snapshot", "restore", file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	after := e2e.WaitServers(t, e2e.Compute(n.Agents[0]), ids, 60*time.Second, e2e.Settled)
	for _, id := range ids {
		b, a := before[id], after[id]
		if a.Status != "ACTIVE" || a.HypervisorHostname != b.HypervisorHostname || a.Name != b.Name {
			t.Fatalf("server %s after restore: %s on %s, was %s on %s", id, a.Status, a.HypervisorHostname, b.Status, b.HypervisorHostname)
		}
	}
	resAfter, err := e2e.Reservations(ctx, n.Agents[2])
	if err != nil || len(resAfter) != len(resBefore) {
		t.Fatalf("reservations %d, were %d: %v", len(resAfter), len(resBefore), err)
	}
	fl, err := flavorNames(n.Agents[2])
	if err != nil || !slices.Contains(fl, "bm-gold") {
		t.Fatalf("flavors %v: %v", fl, err)
	}
	allocs, err := ir.Allocations(ctx, class)
	if err != nil || len(allocs) != len(ids) {
		t.Fatalf("Ironic allocations %d, want %d: %v", len(allocs), len(ids), err)
	}
	// The new cluster works: a server is deleted and Ironic frees its node.
	if err := servers.Delete(ctx, e2e.Compute(n.Agents[0]), ids[0]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e2e.WaitGone(t, e2e.Compute(n.Agents[0]), ids[:1], 60*time.Second)
	// A truncated file is refused by name.
	raw, _ := os.ReadFile(file)
	bad := file + ".truncated"
	_ = os.WriteFile(bad, raw[:len(raw)/2], 0o600)
	if _, err := corral(t, bin, n.Agents[0], n.Token, "snapshot", "restore", bad); err == nil || !containsAll(err.Error(), bad, "truncated") {
		t.Fatalf("truncated restore: %v", err)
	}
}

// TestRecoverFromOneSurvivor: two of three peers are destroyed; `corral
// operator recover` on the third's data dir makes it a one-voter cluster
// with every write; two new peers join it.
func TestRecoverFromOneSurvivor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := e2e.Binary(t)
	c := e2e.Start(t, 3, e2e.Options{})
	c.AwaitReady(45 * time.Second)
	leader := c.Leader(15 * time.Second)
	for i := range 10 {
		if err := createFlavor(leader, fmt.Sprintf("r%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	survivor := c.Agents[0]
	testkit.Eventually(t, 10*time.Second, func() error {
		fl, err := flavorNames(survivor)
		if err != nil || !slices.Contains(fl, "r09") {
			return fmt.Errorf("survivor flavors %v: %v", fl, err)
		}
		return nil
	})
	for _, a := range c.Agents {
		a.Kill()
	}
	out, err := corral(t, bin, survivor, c.Token, "operator", "recover", "--name", survivor.Name, "--data-dir", survivor.DataDir,
		"--bind", survivor.IP, "--raft-port", fmt.Sprint(survivor.RaftPort))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	survivor.Start()
	testkit.Eventually(t, 30*time.Second, func() error {
		st, err := survivor.Raft(context.Background())
		if err != nil {
			return err
		}
		if st.State != "leader" {
			return fmt.Errorf("survivor is %s", st.State)
		}
		return nil
	})
	for _, a := range c.Agents[1:] {
		if err := os.RemoveAll(a.DataDir); err != nil {
			t.Fatal(err)
		}
		a.Start()
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		st := raftOf(t, survivor)
		if len(st.Voters) != 3 {
			return fmt.Errorf("voters %v non-voters %v", st.Voters, st.Nonvoters)
		}
		for _, a := range c.Agents {
			fl, err := flavorNames(a)
			if err != nil || !slices.Contains(fl, "r09") {
				return fmt.Errorf("%s flavors %v: %v", a.Name, fl, err)
			}
		}
		return nil
	})
	if err := createFlavor(c.Agents[2], "after-recover"); err != nil {
		t.Fatal(err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
