package failover

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

// TestDrainUndrainForceDown: a drained host's servers move away at epoch
// +1 and no new server lands on it; undrained, it gets new servers again.
// Forcing a live host down through the API moves its servers away too.
func TestDrainUndrainForceDown(t *testing.T) {
	f := start(t, 4, 30, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 200 * time.Millisecond})
	ids := f.boot(12, "drain")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "12 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	drained := f.victim(srv, leader)
	obs := f.other(drained)
	mine := ownedBy(srv, drained.Name)

	f.do(obs, http.MethodPost, "/v1/hosts/"+drained.Name+"/drain", nil, nil)
	took := f.awaitReowned(obs, mine, []string{drained.Name}, reownBound)
	t.Logf("bound: %d servers of a drained host moved within %s; measured %s", len(mine), reownBound, took.Round(time.Millisecond))
	f.checkMoved(obs, mine, drained.Name, 2)
	hs, err := f.hosts(obs)
	if err != nil {
		t.Fatal(err)
	}
	if h := hs[drained.Name]; h.Status != "up" || !h.Drained || h.Servers != 0 {
		t.Fatalf("drained host: %+v; want up, drained, no servers", h)
	}
	more := f.boot(4, "while-drained")
	got := f.waitServers(obs, more, 60*time.Second, "servers booted during the drain ACTIVE", active)
	for id, s := range got {
		if s.Host == drained.Name && contains(more, id) {
			t.Errorf("server %s landed on the drained host %s", id, drained.Name)
		}
	}

	f.do(obs, http.MethodPost, "/v1/hosts/"+drained.Name+"/undrain", nil, nil)
	again := f.boot(3, "after-undrain")
	got = f.waitServers(obs, again, 60*time.Second, "servers booted after the undrain ACTIVE", active)
	on := 0
	for _, id := range again {
		if got[id].Host == drained.Name {
			on++
		}
	}
	if on == 0 {
		t.Errorf("no new server landed on the undrained host %s (it owns the fewest)", drained.Name)
	}
	t.Logf("%d of %d servers booted after the undrain landed on %s", on, len(again), drained.Name)

	// Force a live host down: its servers move away.
	all, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	forced := f.victim(all, leader)
	if forced == drained {
		forced = f.other(leader, drained)
	}
	theirs := ownedBy(all, forced.Name)
	if len(theirs) == 0 {
		t.Fatalf("%s owns no server to move", forced.Name)
	}
	epochs := map[string]uint64{}
	for id := range theirs {
		o, err := f.owner(obs, id, "")
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = o.Epoch
	}
	f.do(obs, http.MethodPost, "/v1/hosts/"+forced.Name+"/force-down", nil, nil)
	took = f.awaitReowned(obs, theirs, []string{forced.Name}, reownBound)
	t.Logf("bound: %d servers of a live host forced down moved within %s; measured %s", len(theirs), reownBound, took.Round(time.Millisecond))
	for id := range theirs {
		o, err := f.owner(obs, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if o.Epoch != epochs[id]+1 || o.Host == forced.Name {
			t.Errorf("server %s: owner %s at epoch %d (%s); want another host at epoch %d", id, o.Host, o.Epoch, o.Reason, epochs[id]+1)
		}
	}
	// It is alive, so it comes back up (empty) after the up grace.
	f.waitHost(obs, forced.Name, "up", 30*time.Second)
	final, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range final {
		if s.Status != "ACTIVE" {
			t.Errorf("server %s is %s", s.ID, s.Status)
		}
	}
	f.checkIronic(final)
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestNoFalseReassignment leaves five healthy hosts with 30 servers alone
// for 20 s: no host may be marked down, no server may move, no failover
// may freeze.
func TestNoFalseReassignment(t *testing.T) {
	f := start(t, 5, 40, sim.Options{DeployDelay: 200 * time.Millisecond})
	ids := f.boot(30, "quiet")
	f.waitServers(f.c.Agents[0], ids, 60*time.Second, "30 servers ACTIVE", active)
	const quiet = 20 * time.Second
	end := time.Now().Add(quiet)
	checks := 0
	for time.Now().Before(end) {
		checks++
		if err := f.calm(); err != nil {
			t.Fatalf("after %d checks: %v", checks, err)
		}
		time.Sleep(time.Second) // the quiet period is what is under test
	}
	if err := f.calm(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		o, err := f.owner(f.c.Agents[0], id, "")
		if err != nil {
			t.Fatal(err)
		}
		if o.Epoch != 1 {
			t.Errorf("server %s is at epoch %d (%s) with no fault injected", id, o.Epoch, o.Reason)
		}
	}
	t.Logf("bound: %s with no fault: 0 reassignments, 0 freezes, every host up, every epoch 1 (%d checks)", quiet, checks+1)
}

// calm reports an error if any peer has reassigned a server or frozen
// failover, or any host is not up.
func (f *fixture) calm() error {
	for _, a := range f.c.Agents {
		for _, m := range []string{"corral_reassignments_total", "corral_failover_freezes_total"} {
			v, err := f.metric(a, m)
			if err != nil {
				return err
			}
			if v != 0 {
				return fmt.Errorf("%s of %s is %v with no fault injected", m, a.Name, v)
			}
		}
	}
	hs, err := f.hosts(f.c.Agents[0])
	if err != nil {
		return err
	}
	for _, h := range hs {
		if h.Status != "up" {
			return fmt.Errorf("host %s is %s with no fault injected", h.Name, h.Status)
		}
	}
	return nil
}
