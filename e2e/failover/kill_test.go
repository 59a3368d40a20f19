package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// reownBound is the generous bound, from a host's death to every one of
// its servers owned by a live host, that the timed tests hold the product
// defaults to. The benchmark measures the real figure.
const reownBound = 15 * time.Second

// awaitReowned polls obs every 20 ms until no server of lost is owned by
// dead (and every one is owned by a live host), and returns the time taken.
func (f *fixture) awaitReowned(obs *e2e.Agent, lost map[string]string, dead []string, bound time.Duration) time.Duration {
	f.t.Helper()
	return f.poll("servers of the dead host re-owned", bound, 20*time.Millisecond, func() error {
		srv, err := f.servers(obs)
		if err != nil {
			return err
		}
		for id := range lost {
			s, ok := srv[id]
			if !ok {
				return fmt.Errorf("server %s is not listed", id)
			}
			for _, d := range dead {
				if s.Host == d {
					return fmt.Errorf("server %s still owned by %s", id, d)
				}
			}
		}
		return nil
	})
}

// checkMoved asserts that every lost server is owned, at epoch, by an up
// host that is not from, still ACTIVE on the node it had.
func (f *fixture) checkMoved(obs *e2e.Agent, lost map[string]string, from string, epoch uint64) map[string]owner {
	f.t.Helper()
	srv, err := f.servers(obs)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]owner{}
	for id, node := range lost {
		o, err := f.owner(obs, id, "")
		if err != nil {
			f.t.Fatalf("owner of %s: %v", id, err)
		}
		out[id] = o
		if o.Host == from || !o.HostUp || o.Epoch != epoch {
			f.t.Errorf("server %s: owner %s (up %v) at epoch %d (%s); want an up host other than %s at epoch %d",
				id, o.Host, o.HostUp, o.Epoch, o.Reason, from, epoch)
		}
		if s := srv[id]; s.Status != "ACTIVE" || s.Node != node {
			f.t.Errorf("server %s is %s on node %s; want ACTIVE on %s", id, s.Status, s.Node, node)
		}
	}
	return out
}

// TestKillHost: SIGKILL a non-leader host of five owning about six of 30
// ACTIVE servers. Every one of them must get a live owner at epoch 2 and
// stay ACTIVE on the same Ironic node. Restarted, the host comes back up,
// takes none of them back and never writes to Ironic for them, and new
// servers land on it again.
func TestKillHost(t *testing.T) {
	f := start(t, 5, 40, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 200 * time.Millisecond})
	ids := f.boot(30, "kill")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "30 servers ACTIVE", active)
	f.checkIronic(srv)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	lost := ownedBy(srv, victim.Name)
	obs := f.other(victim)
	t.Logf("killing %s (leader %s), which owns %d of %d servers", victim.Name, leader.Name, len(lost), len(ids))
	f.attributed(victim)

	killed := time.Now()
	victim.Kill()
	took := f.awaitReowned(obs, lost, []string{victim.Name}, reownBound)
	t.Logf("bound: servers of a SIGKILLed host re-owned within %s; measured %s", reownBound, took.Round(time.Millisecond))
	moved := f.checkMoved(obs, lost, victim.Name, 2)
	all, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	f.checkIronic(all)
	if n := len(f.rec.by(victim.Name, killed)); n != 0 {
		t.Fatalf("a killed host wrote to Ironic %d times", n)
	}

	// Restart: the host is marked up again and takes nothing back.
	before := f.sim.WritesFrom(ua(victim))
	restarted := time.Now()
	victim.Start()
	upIn := f.waitHost(obs, victim.Name, "up", 30*time.Second)
	t.Logf("bound: restarted host marked up within 30s; measured %s", upIn.Round(time.Millisecond))
	// Its own replica catches up and shows every lost server with its new owner.
	f.poll("restarted host's replica shows the new owners", 30*time.Second, 50*time.Millisecond, func() error {
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
	for id, o := range moved {
		got, err := f.owner(obs, id, "linearizable")
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != o.Host || got.Epoch != o.Epoch {
			t.Errorf("server %s changed hands after the restart: %s@%d → %s@%d (%s)", id, o.Host, o.Epoch, got.Host, got.Epoch, got.Reason)
		}
	}

	// New servers may land on it: it has the fewest.
	again := f.boot(5, "again")
	got := f.waitServers(obs, again, 60*time.Second, "5 new servers ACTIVE", active)
	on := 0
	for _, s := range got {
		if s.Host == victim.Name {
			on++
		}
	}
	if on == 0 {
		t.Errorf("no new server landed on the restarted host %s", victim.Name)
	}
	if ws := f.rec.touching(victim.Name, restarted, lost); len(ws) > 0 {
		t.Errorf("restarted host %s wrote to Ironic for servers it had lost: %v", victim.Name, ws)
	}
	t.Logf("%d of 5 new servers landed on %s; its Ironic writes since the restart: %d (all for its new servers)",
		on, victim.Name, f.sim.WritesFrom(ua(victim))-before)
	all, err = f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	f.checkIronic(all)
}

// TestKillMidDeploy: with a 6 s deploy (longer than detection, so that
// the new owner finds the node still deploying), SIGKILL the host owning servers
// while they are spawning. The new owners resume from Ironic's node state:
// every server ends ACTIVE on the node it had reserved, with exactly one
// allocation in Ironic.
func TestKillMidDeploy(t *testing.T) {
	f := start(t, 5, 20, sim.Options{DeployDelay: 6 * time.Second, UndeployDelay: 200 * time.Millisecond})
	leader := f.c.Leader(10 * time.Second)
	ids := f.boot(10, "spawn")
	obs := f.other(leader)
	srv, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	victim := f.victim(srv, leader)
	obs = f.other(victim)
	mine := ownedBy(srv, victim.Name)
	var mineIDs []string
	for id := range mine {
		mineIDs = append(mineIDs, id)
	}
	spawning := f.waitServers(obs, mineIDs, 20*time.Second, "the victim's servers spawning", func(s server) bool {
		return s.Task == "spawning" && s.Node != ""
	})
	lost := map[string]string{}
	for id, s := range spawning {
		if s.Host == victim.Name {
			lost[id] = s.Node
		}
	}
	t.Logf("killing %s while its %d servers are spawning", victim.Name, len(lost))
	victim.Kill()
	took := f.awaitReowned(obs, lost, []string{victim.Name}, reownBound)
	t.Logf("bound: spawning servers re-owned within %s; measured %s", reownBound, took.Round(time.Millisecond))
	final := f.waitServers(obs, ids, 30*time.Second, "every server ACTIVE", active)
	t.Logf("bound: all ACTIVE within 30s of the re-ownership")
	f.checkMoved(obs, lost, victim.Name, 2)
	f.checkIronic(final)
	deploys := f.rec.provisions("active")
	for id, node := range lost {
		if deploys[node] != 1 {
			t.Errorf("server %s: node %s was asked to deploy %d times, want once", id, node, deploys[node])
		}
	}
}
