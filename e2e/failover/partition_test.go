package failover

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// isolation cuts one agent off from the other agents with iptables while
// every agent, the cut one included, still reaches 127.0.0.1 (the Ironic
// simulator) and the test reaches every agent.
//
// Agents dial raft, gossip and forwarding connections without binding a
// source address, so on loopback those leave from 127.0.0.1 and an
// address match cannot tell them from the test's own requests. Each agent
// therefore runs in a cgroup of its own (a wrapper moves it there before
// exec, so that every socket it opens belongs to it), and the rules match
// the sending socket's cgroup on OUTPUT, which every loopback packet
// crosses: what the cut agent sends to another agent's address, and what
// another agent sends to the cut agent's address, is dropped.
type isolation struct {
	t      testing.TB
	root   string // cgroup2 directory of this test, one child per agent
	rel    string // the same, relative to the cgroup2 mount (for --path)
	chain  string
	healed sync.Once
}

// newIsolation checks for root, iptables and a writable cgroup2 hierarchy
// (skipping the test otherwise), creates a cgroup per agent name and
// points CORRAL_BIN at a wrapper that starts each agent in its cgroup.
// Call it before start.
func newIsolation(t *testing.T, hosts int) *isolation {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("partition test needs root for iptables (run as root)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("partition test needs iptables: install it (apt-get install iptables)")
	}
	mount := cgroup2Mount()
	if mount == "" {
		t.Skip("partition test needs a cgroup2 hierarchy to tell the agents' sockets apart (none is mounted)")
	}
	real := e2e.Binary(t)
	rel := fmt.Sprintf("corral-failover-%d", os.Getpid())
	is := &isolation{t: t, root: filepath.Join(mount, rel), rel: rel, chain: fmt.Sprintf("CORRAL-FO-%d", os.Getpid()%100000)}
	for i := 1; i <= hosts; i++ {
		if err := os.MkdirAll(filepath.Join(is.root, fmt.Sprintf("peer%d", i)), 0o755); err != nil {
			t.Skipf("partition test needs a writable cgroup2 hierarchy at %s: %v", mount, err)
		}
	}
	// Registered before the agents start, so it runs after they are stopped.
	t.Cleanup(func() {
		is.heal()
		dirs, _ := os.ReadDir(is.root)
		for _, d := range dirs {
			_ = os.Remove(filepath.Join(is.root, d.Name()))
		}
		_ = os.Remove(is.root)
	})
	is.ipt("-D", "OUTPUT", "-j", is.chain) // leftovers of a crashed run
	is.ipt("-F", is.chain)
	is.ipt("-X", is.chain)
	if out, err := exec.Command("iptables", "-w", "10", "-N", is.chain).CombinedOutput(); err != nil {
		t.Skipf("iptables cannot create a chain here: %v: %s", err, out)
	}
	wrapper := filepath.Join(t.TempDir(), "corral-in-cgroup")
	script := fmt.Sprintf(`#!/bin/sh
name=
prev=
for a in "$@"; do
	[ "$prev" = "--name" ] && name="$a"
	prev="$a"
done
echo $$ > %q/"$name"/cgroup.procs || exit 1
exec %q "$@"
`, is.root, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CORRAL_BIN", wrapper)
	return is
}

// cgroup2Mount returns where the cgroup2 hierarchy is mounted, or "".
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	return ""
}

// ipt runs iptables and returns its error (callers that tear down ignore it).
func (is *isolation) ipt(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "10"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// cut isolates victim from the others.
func (is *isolation) cut(victim *e2e.Agent, others []*e2e.Agent) {
	is.t.Helper()
	var rules [][]string
	for _, o := range others {
		rules = append(rules,
			[]string{"-m", "cgroup", "--path", is.rel + "/" + victim.Name, "-d", o.IP + "/32", "-j", "DROP"},
			[]string{"-m", "cgroup", "--path", is.rel + "/" + o.Name, "-d", victim.IP + "/32", "-j", "DROP"})
	}
	for _, r := range rules {
		if err := is.ipt(append([]string{"-A", is.chain}, r...)...); err != nil {
			is.t.Fatal(err)
		}
	}
	if err := is.ipt("-I", "OUTPUT", "1", "-j", is.chain); err != nil {
		is.t.Fatal(err)
	}
}

// heal removes the chain and every rule in it; safe to call twice.
func (is *isolation) heal() {
	is.healed.Do(func() {
		for is.ipt("-D", "OUTPUT", "-j", is.chain) == nil {
		}
		_ = is.ipt("-F", is.chain)
		_ = is.ipt("-X", is.chain)
	})
}

// partitionHold is how long TestPartitionHost keeps the host cut off.
const partitionHold = 35 * time.Second

// TestPartitionHost cuts a non-leader host off from its peers while it
// still reaches Ironic, with two of its deletes in flight in Ironic (the
// undeploy outlasts detection). The outcome must be that of a kill: its
// servers get live owners at epoch 2, ACTIVE on the same nodes, and its
// deletes are finished by the new owners. From the moment the plan is
// committed the cut-off host must not write to Ironic for the servers it
// lost, during the partition (held 35 s, longer than gossip keeps talking
// to dead members) or after it heals; healed, it rejoins, and every server
// has one owner, one node and one allocation.
func TestPartitionHost(t *testing.T) {
	is := newIsolation(t, 5)
	f := start(t, 5, 20, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 8 * time.Second})
	ids := f.boot(15, "part")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	lost := ownedBy(srv, victim.Name)
	if len(lost) < 3 {
		t.Fatalf("%s owns %d servers; the test needs three", victim.Name, len(lost))
	}
	obs := f.other(victim)
	var others []*e2e.Agent
	for _, a := range f.c.Agents {
		if a != victim {
			others = append(others, a)
		}
	}
	deleted, kept := map[string]string{}, map[string]string{}
	for id, node := range lost {
		if len(deleted) < 2 {
			deleted[id] = node
		} else {
			kept[id] = node
		}
	}
	var delIDs, delNodes []string
	for id, node := range deleted {
		delIDs, delNodes = append(delIDs, id), append(delNodes, node)
	}
	f.deleteServers(obs, delIDs)
	f.awaitNodeStates(delNodes, "deleting", 10*time.Second)

	is.cut(victim, others)
	cut := time.Now()
	t.Cleanup(is.heal)
	t.Logf("cut %s (leader %s) off from its peers with %d undeploys in flight", victim.Name, leader.Name, len(deleted))
	took := f.awaitReowned(obs, lost, []string{victim.Name}, reownBound)
	t.Logf("bound: servers of a partitioned host re-owned within %s; measured %s", reownBound, took.Round(time.Millisecond))
	moved := f.checkMoved(obs, kept, victim.Name, 2)
	planAt := time.Now()
	for _, o := range moved {
		if at, err := time.Parse("2006-01-02T15:04:05Z", o.Since); err == nil && at.Before(planAt) {
			planAt = at
		}
	}
	planAt = planAt.Truncate(time.Second) // the API shows whole seconds: err on the early side
	goneIn := f.awaitGone(obs, deleted, 30*time.Second)
	t.Logf("bound: its in-flight deletes finished by the new owners within 30s; measured %s", goneIn.Round(time.Millisecond))

	// Hold the partition past memberlist's 30 s of gossip to the dead: by
	// then each side has given up on the other, and only a reconnection
	// brings the host back. Meanwhile the cut-off host must stay fenced.
	for time.Since(cut) < partitionHold {
		if ws := f.rec.touching(victim.Name, planAt, lost); len(ws) > 0 {
			break
		}
		time.Sleep(500 * time.Millisecond) // the partition's length is what is under test
	}
	during := f.rec.touching(victim.Name, planAt, lost)
	before := f.sim.WritesFrom(ua(victim))
	is.heal()
	healed := time.Now()
	upIn := f.waitHost(obs, victim.Name, "up", 30*time.Second)
	t.Logf("bound: host healed after %s up again within 30s; measured %s", partitionHold, upIn.Round(time.Millisecond))
	f.poll("healed host's replica shows the new owners", 30*time.Second, 50*time.Millisecond, func() error {
		for id, o := range moved {
			got, err := f.owner(victim, id, "stale")
			if err != nil {
				return err
			}
			if got.Host != o.Host || got.Epoch != o.Epoch {
				return fmt.Errorf("%s's replica: server %s owned by %s at %d", victim.Name, id, got.Host, got.Epoch)
			}
		}
		return nil
	})
	all, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range all {
		o, err := f.owner(obs, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if !o.HostUp || s.Host != o.Host {
			t.Errorf("server %s: owner %s (up %v), listed on %s", id, o.Host, o.HostUp, s.Host)
		}
	}
	f.checkIronic(all)
	if len(during) > 0 {
		t.Errorf("partitioned host %s wrote to Ironic for servers it had lost (plan committed %s): %v",
			victim.Name, planAt.Format("15:04:05"), during)
	}
	if ws := f.rec.touching(victim.Name, healed, lost); len(ws) > 0 {
		t.Errorf("healed host %s wrote to Ironic for servers it had lost: %v", victim.Name, ws)
	}
	if after := f.sim.WritesFrom(ua(victim)); after != before {
		t.Errorf("healed host %s, which owns nothing, wrote to Ironic: %d → %d", victim.Name, before, after)
	}
	undeploys := f.rec.provisions("deleted", "undeploy")
	for id, node := range deleted {
		if undeploys[node] != 1 {
			t.Errorf("server %s: node %s was asked to undeploy %d times, want once", id, node, undeploys[node])
		}
	}
	t.Logf("partitioned host's Ironic writes: %d in all, %d for lost servers after the plan", before, len(during))
}
