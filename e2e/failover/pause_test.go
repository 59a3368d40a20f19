package failover

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// deleteServers asks a to delete the servers.
func (f *fixture) deleteServers(a *e2e.Agent, ids []string) {
	f.t.Helper()
	for _, id := range ids {
		f.do(a, http.MethodDelete, "/compute/v2.1/servers/"+id, nil, nil)
	}
}

// awaitNodeStates waits until the simulator shows each node in state.
func (f *fixture) awaitNodeStates(nodes []string, state string, timeout time.Duration) time.Duration {
	f.t.Helper()
	return f.poll("nodes "+state, timeout, 10*time.Millisecond, func() error {
		by := map[string]sim.NodeState{}
		for _, n := range f.sim.Nodes() {
			by[n.UUID] = n
		}
		for _, n := range nodes {
			if by[n].ProvisionState != state {
				return fmt.Errorf("node %s is %s", n, by[n].ProvisionState)
			}
		}
		return nil
	})
}

// awaitGone waits until a answers 404 for every server and Ironic holds
// nothing for them: their nodes available, without instance or allocation.
func (f *fixture) awaitGone(a *e2e.Agent, servers map[string]string, timeout time.Duration) time.Duration {
	f.t.Helper()
	return f.poll("deleted servers gone from corral and Ironic", timeout, 20*time.Millisecond, func() error {
		for id := range servers {
			var body map[string]any
			err := f.get(a, "/compute/v2.1/servers/"+id, &body)
			if err == nil {
				return fmt.Errorf("server %s still there", id)
			}
			if !client.IsStatus(err, http.StatusNotFound) {
				return err
			}
		}
		return f.nodesFree(servers)
	})
}

// nodesFree reports an error naming any node of servers that is not
// available or still holds an instance or allocation.
func (f *fixture) nodesFree(servers map[string]string) error {
	by := map[string]sim.NodeState{}
	for _, n := range f.sim.Nodes() {
		by[n.UUID] = n
	}
	for id, node := range servers {
		n := by[node]
		if n.ProvisionState != "available" || n.InstanceUUID != "" || n.AllocationUUID != "" {
			return fmt.Errorf("node %s of deleted server %s: %s, instance %q, allocation %q",
				node, id, n.ProvisionState, n.InstanceUUID, n.AllocationUUID)
		}
	}
	return nil
}

// sumMetric adds a metric over the agents.
func (f *fixture) sumMetric(name string, agents ...*e2e.Agent) float64 {
	f.t.Helper()
	sum := 0.0
	for _, a := range agents {
		sum += f.mustMetric(a, name)
	}
	return sum
}

// TestPauseHostWithPendingDeletes: a host undeploying servers is frozen
// (SIGSTOP) with Ironic's undeploys in flight, and one more of its servers
// is deleted while it is frozen. The leader marks it down, the new owners
// finish every delete; thawed (SIGCONT), the host must not act on the
// servers it lost: it sends Ironic nothing, every delete finished exactly
// once and no node is left with an instance.
func TestPauseHostWithPendingDeletes(t *testing.T) {
	f := start(t, 5, 20, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 3 * time.Second})
	ids := f.boot(15, "pause")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	lost := ownedBy(srv, victim.Name)
	if len(lost) < 2 {
		t.Fatalf("%s owns %d servers; the test needs two", victim.Name, len(lost))
	}
	obs := f.other(victim)
	var first []string
	var firstNodes []string
	var last string
	for id, node := range lost {
		if last == "" {
			last = id
			continue
		}
		first, firstNodes = append(first, id), append(firstNodes, node)
	}
	fenced0 := f.mustMetric(victim, "corral_fenced_operations_total")
	deletes0 := f.sumMetric("corral_server_deletes_total", f.c.Agents...)

	// Deletes in flight: the host has asked Ironic to undeploy, and is frozen.
	f.deleteServers(obs, first)
	f.awaitNodeStates(firstNodes, "deleting", 10*time.Second)
	f.attributed(victim)
	victim.Pause()
	paused := time.Now()
	f.deleteServers(obs, []string{last})
	t.Logf("froze %s with %d undeploys in flight and deleted %d more of its servers", victim.Name, len(first), 1)

	f.waitHost(obs, victim.Name, "down", reownBound)
	downIn := time.Since(paused)
	goneIn := f.awaitGone(obs, lost, 30*time.Second)
	t.Logf("bound: frozen host down within %s, measured %s; its deletes finished by the new owners within 30s, measured %s after that",
		reownBound, downIn.Round(time.Millisecond), goneIn.Round(time.Millisecond))

	before := f.sim.WritesFrom(ua(victim))
	victim.Resume()
	resumed := time.Now()
	// The thawed host catches up with the log: it is up again, and its own
	// replica no longer shows the deleted servers.
	f.waitHost(obs, victim.Name, "up", 30*time.Second)
	f.poll("thawed host's replica caught up", 30*time.Second, 50*time.Millisecond, func() error {
		for id := range lost {
			var body map[string]any
			err := f.get(victim, "/compute/v2.1/servers/"+id+"?consistency=stale", &body)
			if err == nil {
				return fmt.Errorf("%s still lists %s", victim.Name, id)
			}
			if !client.IsStatus(err, http.StatusNotFound) {
				return err
			}
		}
		return nil
	})
	// Watch a little longer: nothing may reach Ironic from it.
	window := time.Now().Add(2 * time.Second)
	for time.Now().Before(window) {
		if ws := f.rec.by(victim.Name, resumed); len(ws) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond) // observation window, not a wait for a state
	}
	fenced := f.mustMetric(victim, "corral_fenced_operations_total") - fenced0
	after := f.sim.WritesFrom(ua(victim))
	t.Logf("thawed host: fenced operations +%v, Ironic writes %d → %d", fenced, before, after)
	var errs []error
	if ws := f.rec.by(victim.Name, resumed); len(ws) > 0 || after != before {
		errs = append(errs, fmt.Errorf("thawed host %s wrote to Ironic after SIGCONT (%d → %d): %v", victim.Name, before, after, ws))
	}
	if ws := f.rec.touching(victim.Name, paused, lost); len(ws) > 0 {
		errs = append(errs, fmt.Errorf("host %s acted on servers it had lost after it was frozen: %v", victim.Name, ws))
	}
	if err := f.nodesFree(lost); err != nil {
		errs = append(errs, err)
	}
	undeploys := f.rec.provisions("deleted", "undeploy")
	for id, node := range lost {
		if undeploys[node] != 1 {
			errs = append(errs, fmt.Errorf("server %s: node %s was asked to undeploy %d times, want once", id, node, undeploys[node]))
		}
	}
	if got := f.sumMetric("corral_server_deletes_total", f.c.Agents...) - deletes0; got != float64(len(lost)) {
		errs = append(errs, fmt.Errorf("%v deletes finished for %d servers deleted", got, len(lost)))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	all, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	f.checkIronic(all)
}
