package failover

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// TestKillConfirmedByRefusedConnections: with a down_grace of a minute
// and the leader's own pings not used (silent_grace off), gossip alone
// cannot have a host marked down within the test. A host that is
// SIGKILLed refuses connections on its raft and gossip ports, and the
// leader confirms the death on that evidence: its servers move. A host
// paused (SIGSTOP) at the same time still has its listeners (the kernel
// accepts connections for it): it is not confirmed dead by that evidence,
// so with these settings it stays up and keeps its servers.
func TestKillConfirmedByRefusedConnections(t *testing.T) {
	f := start(t, 5, 30, sim.Options{DeployDelay: 200 * time.Millisecond}, "CORRAL_FAILOVER_DOWN_GRACE=60s",
		"CORRAL_FAILOVER_SILENT_GRACE=off")
	ids := f.boot(15, "evid")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	killed := f.victim(srv, leader)
	var paused *e2e.Agent
	for _, a := range f.running() {
		if a != leader && a != killed && len(ownedBy(srv, a.Name)) > 0 && (paused == nil || len(ownedBy(srv, a.Name)) > len(ownedBy(srv, paused.Name))) {
			paused = a
		}
	}
	if paused == nil {
		t.Fatal("no second non-leader host owns a server")
	}
	obs := f.other(killed, paused)
	t.Logf("pausing %s (%d servers) and killing %s (%d servers); leader %s", paused.Name, len(ownedBy(srv, paused.Name)),
		killed.Name, len(ownedBy(srv, killed.Name)), leader.Name)
	paused.Pause()
	resumed := false
	defer func() {
		if !resumed {
			paused.Resume()
		}
	}()
	killed.Kill()
	took := f.awaitReowned(obs, ownedBy(srv, killed.Name), []string{killed.Name}, 30*time.Second)
	f.checkMoved(obs, ownedBy(srv, killed.Name), killed.Name, 2)
	hs, err := f.hosts(obs)
	if err != nil {
		t.Fatal(err)
	}
	if h := hs[paused.Name]; h.Status != "up" {
		t.Errorf("paused host %s is %s: a host whose listeners are there was taken for dead", paused.Name, h.Status)
	}
	if err := f.keeps(obs, srv, paused.Name); err != nil {
		t.Errorf("paused host lost a server: %v", err)
	}
	paused.Resume()
	resumed = true
	t.Logf("bound: killed host's servers re-owned within 30s with a 60s down_grace; measured %s; paused host kept its servers", ms(took))
}

// TestPauseConfirmedBySilence: with a down_grace of a minute, gossip's
// word alone cannot have a host marked down within the test. A host that
// is paused (SIGSTOP) keeps its listeners, so its ports never refuse; but
// it answers neither gossip nor the leader's own pings, and the leader
// confirms the death on both: its servers move, each to a live host at
// epoch 2. Resumed, it is up again.
func TestPauseConfirmedBySilence(t *testing.T) {
	f := start(t, 5, 30, sim.Options{DeployDelay: 200 * time.Millisecond}, "CORRAL_FAILOVER_DOWN_GRACE=60s")
	ids := f.boot(15, "silent")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	paused := f.victim(srv, leader)
	lost := ownedBy(srv, paused.Name)
	obs := f.other(leader, paused)
	paused.Pause()
	resumed := false
	defer func() {
		if !resumed {
			paused.Resume()
		}
	}()
	took := f.awaitReowned(obs, lost, []string{paused.Name}, 30*time.Second)
	f.checkMoved(obs, lost, paused.Name, 2)
	paused.Resume()
	resumed = true
	upIn := f.waitHost(obs, paused.Name, "up", 30*time.Second)
	t.Logf("bound: paused host's servers re-owned within 30s with a 60s down_grace; measured %s; resumed, up again in %s",
		ms(took), ms(upIn))
}

// TestNoFalseReassignmentUnderLossAndStarvation: with the product
// defaults, 5 % of the packets between peers dropped and one host that
// owns servers held to a few percent of one CPU (a CFS quota, cgroup v2
// or v1) for 30 s, no host may be marked down, no server may move and no
// raft election may be held.
func TestNoFalseReassignmentUnderLossAndStarvation(t *testing.T) {
	is := newIsolation(t, 5)
	needStarvation(t, is)
	f := startIn(t, is.cg, 5, 30, sim.Options{DeployDelay: 200 * time.Millisecond})
	ids := f.boot(15, "slow")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	obs := f.other(leader, victim)
	is.lossy(f.c.Agents, lossRate)
	defer is.heal()
	const window = 30 * time.Second
	w, thr := f.starveFor(t, is, victim, obs, starveTestPercent, window)
	if w.moved != 0 || len(w.downSeen) != 0 || w.elections != 0 {
		t.Errorf("under %.0f%% loss with %s starved: %s", 100*lossRate, victim.Name, w)
	}
	if err := f.keeps(obs, srv, victim.Name); err != nil {
		t.Errorf("starved host lost a server: %v", err)
	}
	for _, id := range ids {
		o, err := f.owner(obs, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if o.Epoch != 1 {
			t.Errorf("server %s is at epoch %d (%s) with every host alive", id, o.Epoch, o.Reason)
		}
	}
	t.Logf("bound: %s of %.0f%% loss with %s at %d%% of one CPU (%s): %s", window, 100*lossRate, victim.Name,
		starveTestPercent, thr, w)
}

// starveTestPercent is the share of one CPU the starved host gets in the
// test.
const starveTestPercent = 5
