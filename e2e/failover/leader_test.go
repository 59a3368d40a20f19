package failover

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/sim"
)

// TestLeaderKilledDuringReassignment: SIGKILL a non-leader host and, the
// moment it is marked down, SIGKILL the leader. The next leader finishes
// the work: every server of both dead hosts ends with a live owner, and
// each moved once per failure: a server of the first host is at epoch 2,
// or at epoch 3 only if the first plan gave it to the leader that died
// next (then moved once more, from that leader at epoch 2). Either path
// is allowed; what must hold on both is checked after the dead hosts are
// restarted: no acknowledged server lost, one live owner each, one node
// per server and one server per node in corral and in Ironic, and no
// Ironic write from a dead host (whose own writes were seen before).
func TestLeaderKilledDuringReassignment(t *testing.T) {
	f := start(t, 5, 20, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 200 * time.Millisecond})
	ids := f.boot(15, "lead")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "15 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	lostA, lostL := ownedBy(srv, victim.Name), ownedBy(srv, leader.Name)
	obs := f.other(victim, leader)
	f.attributed(victim)
	f.attributed(leader)

	killed := time.Now()
	victim.Kill()
	downIn := f.waitHost(obs, victim.Name, "down", reownBound)
	leader.Kill()
	t.Logf("killed %s, saw it down after %s, then killed the leader %s", victim.Name, downIn.Round(time.Millisecond), leader.Name)

	all := maps.Clone(lostA)
	maps.Copy(all, lostL)
	f.awaitReowned(obs, all, []string{victim.Name, leader.Name}, 2*reownBound)
	took := time.Since(killed)
	next := f.c.Leader(10 * time.Second)
	t.Logf("bound: servers of both dead hosts re-owned within %s of the first kill; measured %s (new leader %s)",
		2*reownBound, took.Round(time.Millisecond), next.Name)

	final, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	viaLeader, indexes := 0, map[uint64]int{}
	check := func(id, node, from string) {
		o, err := f.owner(obs, id, "linearizable")
		if err != nil {
			t.Fatalf("owner of %s: %v", id, err)
		}
		indexes[o.Index]++
		switch {
		case !o.HostUp || o.Host == victim.Name || o.Host == leader.Name:
			t.Errorf("server %s owned by %s (up %v)", id, o.Host, o.HostUp)
		case o.Epoch == 2 && strings.Contains(o.Reason, "from "+from+" at epoch 1"):
		case o.Epoch == 3 && from == victim.Name && strings.Contains(o.Reason, "from "+leader.Name+" at epoch 2"):
			viaLeader++
		default:
			t.Errorf("server %s of %s: owner %s at epoch %d (%s): moved more than once per failure", id, from, o.Host, o.Epoch, o.Reason)
		}
		if s := final[id]; s.Status != "ACTIVE" || s.Node != node {
			t.Errorf("server %s is %s on %s; want ACTIVE on %s", id, s.Status, s.Node, node)
		}
	}
	for id, node := range lostA {
		check(id, node, victim.Name)
	}
	for id, node := range lostL {
		check(id, node, leader.Name)
	}
	t.Logf("%d servers of %s, %d of %s; %d moved twice (the first plan gave them to the leader that died); plans at log indexes %v",
		len(lostA), victim.Name, len(lostL), leader.Name, viaLeader, indexes)
	f.checkIronic(final)
	if n := len(f.rec.by(victim.Name, killed)) + len(f.rec.by(leader.Name, killed.Add(downIn))); n != 0 {
		t.Errorf("dead hosts wrote to Ironic %d times", n)
	}

	healed := time.Now()
	f.heal(victim, leader)
	f.checkInvariants(obs, ids)
	for _, w := range [][]write{f.rec.touching(victim.Name, healed, all), f.rec.touching(leader.Name, healed, all)} {
		if len(w) > 0 {
			t.Errorf("a restarted host wrote to Ironic for servers it had lost: %v", w)
		}
	}
}

// TestLeaderKilledBetweenDownAndPlan forces the window open: a killed
// host is forced down through the API (one log entry) and the leader is
// SIGKILLed right after that commit, before its reconcile loop can plan.
// The next leader must plan the down host's servers itself, once. Which
// leader committed the plan is not fixed (the old one may win the race);
// what must hold either way is checked after both dead hosts are
// restarted: no acknowledged server lost, one live owner each, one node
// per server and one server per node in corral and in Ironic, and no
// Ironic write from the dead victim (whose own writes were seen before).
func TestLeaderKilledBetweenDownAndPlan(t *testing.T) {
	f := start(t, 5, 20, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 200 * time.Millisecond})
	ids := f.boot(10, "window")
	srv := f.waitServers(f.c.Agents[0], ids, 60*time.Second, "10 servers ACTIVE", active)
	leader := f.c.Leader(10 * time.Second)
	victim := f.victim(srv, leader)
	lost := ownedBy(srv, victim.Name)
	obs := f.other(victim, leader)
	f.attributed(victim)

	victim.Kill()
	killed := time.Now()
	f.do(obs, "POST", "/v1/hosts/"+victim.Name+"/force-down", nil, nil)
	var st struct {
		LastIndex uint64 `json:"last_index"`
	}
	err := f.get(leader, "/v1/cluster/raft", &st)
	leader.Kill()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, forced it down, killed the leader %s at its log index %d", victim.Name, leader.Name, st.LastIndex)
	f.awaitReowned(obs, lost, []string{victim.Name, leader.Name}, reownBound)
	t.Logf("bound: servers of the forced-down host re-owned within %s; measured %s", reownBound, time.Since(killed).Round(time.Millisecond))
	final, err := f.servers(obs)
	if err != nil {
		t.Fatal(err)
	}
	by, twice := "the new leader", 0
	for id, node := range lost {
		o, err := f.owner(obs, id, "linearizable")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !o.HostUp || o.Host == victim.Name || o.Host == leader.Name:
			t.Errorf("server %s owned by %s (up %v)", id, o.Host, o.HostUp)
		case o.Epoch == 2 && strings.Contains(o.Reason, "from "+victim.Name+" at epoch 1"):
			if o.Index <= st.LastIndex {
				by = "the old leader, before it died"
			}
		case o.Epoch == 3 && strings.Contains(o.Reason, "from "+leader.Name+" at epoch 2"):
			twice++
		default:
			t.Errorf("server %s: owner %s at epoch %d (%s): moved more than once per failure", id, o.Host, o.Epoch, o.Reason)
		}
		if s := final[id]; s.Status != "ACTIVE" || s.Node != node {
			t.Errorf("server %s is %s on %s; want ACTIVE on %s", id, s.Status, s.Node, node)
		}
	}
	t.Logf("the plan for %s's %d servers was committed by %s; %d of them were planned onto the dead leader and moved again",
		victim.Name, len(lost), by, twice)
	f.checkIronic(final)
	if n := len(f.rec.by(victim.Name, killed)); n != 0 {
		t.Errorf("the killed host %s wrote to Ironic %d times", victim.Name, n)
	}

	healed := time.Now()
	f.heal(victim, leader)
	f.checkInvariants(obs, ids)
	if w := f.rec.touching(victim.Name, healed, lost); len(w) > 0 {
		t.Errorf("restarted host %s wrote to Ironic for servers it had lost: %v", victim.Name, w)
	}
}

// TestLeaderStopHandsOver: a leader stopped gracefully (SIGTERM) hands
// raft leadership over before it stops serving. The next write commits
// through a survivor, and no survivor reached its heartbeat timeout and
// started an election: the new leader was elected on the old one's word.
func TestLeaderStopHandsOver(t *testing.T) {
	f := start(t, 3, 3, sim.Options{DeployDelay: 200 * time.Millisecond})
	leader := f.c.Leader(10 * time.Second)
	offsets := map[*e2e.Agent]int64{}
	for _, a := range f.c.Agents {
		if a != leader {
			offsets[a] = logSize(t, a)
		}
	}
	stopped := time.Now()
	leader.Stop(30 * time.Second)
	exited := time.Since(stopped)
	obs := f.other(leader)
	attempt := 0
	f.poll("a write committed after the leader's stop", 30*time.Second, 20*time.Millisecond, func() error {
		attempt++
		id := fmt.Sprintf("after-stop-%d", attempt)
		ctx, cancel := ctx10()
		defer cancel()
		return obs.Client().Do(ctx, http.MethodPost, "/compute/v2.1/flavors", map[string]any{"flavor": map[string]any{
			"name": id, "id": id, "vcpus": 1, "ram": 1, "disk": 1}}, nil)
	})
	t.Logf("write committed %s after the SIGTERM (the agent exited after %s)", ms(time.Since(stopped)), ms(exited))
	if own := readLog(t, leader, 0); !strings.Contains(own, "handed raft leadership over") {
		t.Errorf("the stopped leader %s did not hand leadership over (its log has no hand-over)", leader.Name)
	}
	for a, off := range offsets {
		if l := readLog(t, a, off); strings.Contains(l, "heartbeat timeout reached") {
			t.Errorf("%s reached its heartbeat timeout after the leader's stop: an election timeout ran", a.Name)
		}
	}
}

// logSize is the size of a's log so far.
func logSize(t *testing.T, a *e2e.Agent) int64 {
	t.Helper()
	fi, err := os.Stat(a.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readLog returns a's log from offset on.
func readLog(t *testing.T, a *e2e.Agent, offset int64) string {
	t.Helper()
	b, err := os.ReadFile(a.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}
