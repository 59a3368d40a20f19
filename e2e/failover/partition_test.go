package failover

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit/netem"
	"github.com/corral-dev/corral/testkit/proc"
)

// isolation cuts one agent off from the other agents with netem while
// every agent, the cut one included, still reaches 127.0.0.1 (the Ironic
// simulator) and the test reaches every agent. Agents dial without
// binding a source address, so each runs in a cgroup of its own and the
// rules match the sending socket's cgroup (see testkit/netem).
type isolation struct {
	t  testing.TB
	cg *proc.Cgroups
	fw *netem.Firewall
}

// newIsolation checks for root, iptables and a writable cgroup2 hierarchy
// (skipping the test otherwise) and creates a cgroup per agent name. Start
// the agents with startIn(t, is.cg, ...).
func newIsolation(t *testing.T, hosts int) *isolation {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	is, err := tryIsolation(t, hosts)
	if errors.Is(err, errNoIsolation) {
		t.Skipf("partition test: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	return is
}

// errNoIsolation: the machine cannot cut or degrade links between agents.
var errNoIsolation = errors.New("cannot isolate agents")

// tryIsolation is newIsolation that returns an error wrapping
// errNoIsolation when the machine lacks what it needs.
func tryIsolation(t testing.TB, hosts int) (*isolation, error) {
	t.Helper()
	return tryIsolationNamed(t, hosts, "")
}

// tryIsolationNamed is tryIsolation for one of several clusters, told
// apart by name in the cgroups' and the firewall chains' names.
func tryIsolationNamed(t testing.TB, hosts int, name string) (*isolation, error) {
	t.Helper()
	var names []string
	for i := 1; i <= hosts; i++ {
		names = append(names, fmt.Sprintf("peer%d", i))
	}
	cg, err := proc.NewCgroups(fmt.Sprintf("corral-failover-%d%s", os.Getpid(), name), names...)
	if err != nil {
		return nil, fmt.Errorf("%w: it needs a writable cgroup2 hierarchy to tell the agents' sockets apart: %v", errNoIsolation, err)
	}
	fw, err := netem.New(fmt.Sprintf("CORRAL-FO-%d%s", os.Getpid()%100000, name))
	if errors.Is(err, netem.ErrNoIptables) {
		_ = cg.Remove()
		return nil, fmt.Errorf("%w: %v", errNoIsolation, err)
	} else if err != nil {
		_ = cg.Remove()
		return nil, err
	}
	// Registered before the agents start, so it runs after they are stopped.
	t.Cleanup(func() {
		if err := fw.Close(); err != nil {
			t.Errorf("remove the partition's rules: %v", err)
		}
		if err := cg.Remove(); err != nil {
			t.Errorf("remove the agents' cgroups: %v", err)
		}
	})
	return &isolation{t: t, cg: cg, fw: fw}, nil
}

// cut isolates victim from the others.
func (is *isolation) cut(victim *e2e.Agent, others []*e2e.Agent) {
	is.t.Helper()
	var hs []netem.Host
	for _, o := range others {
		hs = append(hs, o.NetHost())
	}
	if err := is.fw.Isolate(victim.NetHost(), hs); err != nil {
		is.t.Fatal(err)
	}
}

// heal removes every rule.
func (is *isolation) heal() {
	is.t.Helper()
	if err := is.fw.Heal(); err != nil {
		is.t.Fatal(err)
	}
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
	f := startIn(t, is.cg, 5, 20, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 8 * time.Second})
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
	f.attributed(victim)

	is.cut(victim, others)
	cut := time.Now()
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
