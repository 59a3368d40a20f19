package upgraderolling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// TestRollingUpgrade upgrades a 3-peer cluster from baseCommit to this tree
// one peer at a time, by docs/operations.md's procedure, under a workload.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two releases and runs real agent processes")
	}
	oldBin, newBin := binaries(t)
	var ir *e2e.Ironic
	if os.Getenv("IRONIC_URL") != "" {
		ir = e2e.RealIronic(t)
		t.Logf("the servers are built on the real Ironic at %s", ir.URL)
	} else {
		const loud = "IRONIC_URL IS NOT SET: THE ROLLING UPGRADE RUNS ON THE IRONIC SIMULATOR, NOT ON A REAL IRONIC " +
			"(export IRONIC_URL=$(scripts/ironic-up.sh), as CI does)"
		fmt.Fprintln(os.Stderr, "upgrade-rolling: "+loud)
		t.Log(loud)
		ir = e2e.SimIronic(t, sim.Options{DeployDelay: 500 * time.Millisecond, UndeployDelay: 300 * time.Millisecond,
			PowerDelay: 300 * time.Millisecond})
	}
	class := ir.Class("roll")
	nodes := ir.EnrollNodes(t, 10, class)

	var newInfo struct {
		Version  string `json:"version"`
		Commands string `json:"command_types"`
	}
	if out, err := exec.Command(newBin, "version", "-f", "json").Output(); err != nil || json.Unmarshal(out, &newInfo) != nil {
		t.Fatalf("corral version of this tree: %v %s", err, out)
	}
	c := e2e.Start(t, 3, e2e.Options{Bin: oldBin, ExtraArgs: []string{"--ironic-url", ir.URL},
		Env: []string{"CORRAL_IRONIC_SYNC_INTERVAL=1s"}})
	c.AwaitReady(60 * time.Second)
	e2e.AwaitNodes(t, c.Agents[0], nodes, 60*time.Second)
	flavor := e2e.BareMetalFlavor(t, c.Agents[0], "roll", class)

	// Servers ACTIVE on the old release.
	cl := e2e.Compute(c.Agents[0])
	var initial []string
	for i := range 3 {
		ctx, cancel := ctx10()
		id, err := e2e.Boot(ctx, cl, fmt.Sprintf("roll-%d", i), flavor)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		initial = append(initial, id)
	}
	e2e.WaitServers(t, cl, initial, 2*time.Minute, func(s *servers.Server) bool { return s.Status == "ACTIVE" })
	t.Logf("%d servers ACTIVE on %s", len(initial), baseCommit)

	w := newWorkload(t, c, flavor, initial)
	go w.run()
	var oldCommands string    // what the old peers advertise
	var lastOldIndex uint64   // the leader's commit index as the last old peer stops
	var lastStartIndex uint64 // ... as it starts again on this tree
	var flavorsAcked []string // flavors created (acknowledged) during the upgrade
	op := &operator{t: t, c: c, oldBin: oldBin, newBin: newBin, version: newInfo.Version, cmds: newInfo.Commands}
	op.beforeStop = func(a *e2e.Agent) {
		if a == c.Agents[len(c.Agents)-1] {
			lastOldIndex = op.leaderCommit()
		}
	}
	op.beforeStart = func(a *e2e.Agent) {
		if a == c.Agents[len(c.Agents)-1] {
			lastStartIndex = op.leaderCommit()
		}
	}
	op.run(procedure(t, "#### Before"), nil)
	each := procedure(t, "#### On each peer, one at a time")
	for i, a := range c.Agents {
		op.run(each, a)
		if i == 0 {
			oldCommands = advertised(t, c, c.Agents[1]) // an old peer, as the new one sees it
		}
		flavorsAcked = append(flavorsAcked, createFlavor(t, c, fmt.Sprintf("after-%s", a.Name)))
		t.Logf("%s runs this tree", a.Name)
	}
	op.run(procedure(t, "#### After the last peer"), nil)
	upgradedIndex := op.leaderCommit() // every peer runs this tree and says so
	if oldCommands == "" || fsm.CommandKnownIn(oldCommands, fsm.CmdStartServerAction) {
		t.Fatalf("the old peers advertised command types %q: not a release without StartServerAction", oldCommands)
	}
	t.Logf("old peers advertised command types %s; this tree %s", oldCommands, newInfo.Commands)

	// With every peer upgraded, an action is committed with its request
	// id and carried out behind an intent (the reboot below): the new
	// types, in use.
	time.Sleep(3 * time.Second) // the workload goes on a little on the upgraded cluster
	w.halt()
	// After the workload stops: it deletes servers, and one it deleted
	// while its reboot was under way would never come back ACTIVE.
	reboot(t, c, w)
	t.Logf("workload: acknowledged %v, refused or unanswered %v", w.acked, w.failed)

	checkServers(t, c, w)
	checkReservations(t, c, ir, w)
	for _, f := range flavorsAcked {
		ctx, cancel := ctx10()
		err := c.Agents[0].Client().Do(ctx, http.MethodGet, "/compute/v2.1/flavors/"+f, nil, nil)
		cancel()
		if err != nil {
			t.Errorf("flavor %s, acknowledged during the upgrade, is gone: %v", f, err)
		}
	}
	lastNewIndex := op.leaderCommit()
	downgrade(t, c, oldBin, newBin)

	// The log: no new command type before the last old peer stopped, and
	// some after it; JSON until the last peer ran this tree, msgpack once
	// every peer said so.
	c.StopAll()
	checkLog(t, filepath.Join(c.Agents[0].DataDir, "raft", "raft.db"), oldCommands,
		logMarks{lastOld: lastOldIndex, lastStart: lastStartIndex, upgraded: upgradedIndex, lastNew: lastNewIndex})
}

// logMarks are the leader's commit indexes at the moments of the upgrade
// the log is checked against.
type logMarks struct {
	lastOld   uint64 // the last old peer stops
	lastStart uint64 // it starts again on this tree
	upgraded  uint64 // every peer shows this tree's version
	lastNew   uint64 // before the downgrade is tried
}

// advertised returns the command types peer other advertises, as a
// running peer of this tree lists it (older peers' APIs show none).
func advertised(t *testing.T, c *e2e.Cluster, other *e2e.Agent) string {
	t.Helper()
	for _, a := range c.Agents {
		if !a.Running() || a.Bin == "" {
			continue
		}
		ctx, cancel := ctx10()
		ms, err := a.Client().Members(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Name == other.Name {
				return m.Commands
			}
		}
	}
	return ""
}

// createFlavor creates a flavor through a running peer, retrying while
// there is no leader, and returns its id.
func createFlavor(t *testing.T, c *e2e.Cluster, name string) string {
	t.Helper()
	var id string
	testkit.Eventually(t, 30*time.Second, func() error {
		var out struct {
			Flavor struct {
				ID string `json:"id"`
			} `json:"flavor"`
		}
		ctx, cancel := ctx10()
		defer cancel()
		err := c.Leader(30*time.Second).Client().Do(ctx, http.MethodPost, "/compute/v2.1/flavors",
			map[string]any{"flavor": map[string]any{"name": name, "vcpus": 1, "ram": 512, "disk": 1}}, &out)
		id = out.Flavor.ID
		return err
	})
	return id
}

// reboot reboots one ACTIVE server of the workload and waits until it is
// ACTIVE again.
func reboot(t *testing.T, c *e2e.Cluster, w *workload) {
	t.Helper()
	cl := e2e.Compute(c.Leader(30 * time.Second))
	w.mu.Lock()
	live := slices.Clone(w.live)
	w.mu.Unlock()
	testkit.Eventually(t, 60*time.Second, func() error {
		for _, id := range live {
			ctx, cancel := ctx10()
			s, err := servers.Get(ctx, cl, id).Extract()
			if err == nil && s.Status == "ACTIVE" && s.TaskState == "" {
				err = servers.Reboot(ctx, cl, id, servers.RebootOpts{Type: servers.HardReboot}).ExtractErr()
				cancel()
				if err == nil {
					w.mu.Lock()
					w.expect[id] = "ACTIVE"
					w.acked["reboot"]++
					w.mu.Unlock()
					e2e.WaitServers(t, cl, []string{id}, 60*time.Second, func(s *servers.Server) bool {
						return s.Status == "ACTIVE" && s.TaskState == ""
					})
					return nil
				}
			} else {
				cancel()
			}
		}
		return errors.New("no ACTIVE server took a reboot")
	})
}

// checkServers: every acknowledged boot that was not deleted exists and
// settles (no task in progress) in the status its last acknowledged
// action leads to; every acknowledged delete is gone; no server of the
// cluster is left in BUILD, ERROR or with a task.
func checkServers(t *testing.T, c *e2e.Cluster, w *workload) {
	t.Helper()
	cl := e2e.Compute(c.Leader(30 * time.Second))
	w.mu.Lock()
	live, deleted := slices.Clone(w.live), slices.Clone(w.deleted)
	expect, unsure := w.expect, w.unsure
	w.mu.Unlock()
	got := e2e.WaitServers(t, cl, live, 3*time.Minute, func(s *servers.Server) bool {
		return s.TaskState == "" && (s.Status == "ACTIVE" || s.Status == "SHUTOFF") &&
			(unsure[s.ID] || s.Status == expect[s.ID])
	})
	t.Logf("%d acknowledged servers settled as their last acknowledged requests said", len(got))
	e2e.WaitGone(t, cl, deleted, 3*time.Minute)
	testkit.Eventually(t, 3*time.Minute, func() error {
		ctx, cancel := ctx10()
		defer cancel()
		pages, err := servers.List(cl, servers.ListOpts{}).AllPages(ctx)
		if err != nil {
			return err
		}
		all, err := servers.ExtractServers(pages)
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.TaskState != "" || (s.Status != "ACTIVE" && s.Status != "SHUTOFF") {
				return fmt.Errorf("server %s (%s) is %s/%s", s.ID, s.Name, s.Status, s.TaskState)
			}
		}
		return nil
	})
}

// checkReservations: one server per node and one node per server, in
// corral's reservations and in Ironic's allocations and nodes.
func checkReservations(t *testing.T, c *e2e.Cluster, ir *e2e.Ironic, w *workload) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e2e.Reservations(ctx, c.Leader(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	byNode, byServer := map[string]string{}, map[string]string{}
	for _, r := range res {
		if s, dup := byNode[r.NodeUUID]; dup {
			t.Errorf("node %s reserved for servers %s and %s", r.NodeUUID, s, r.ServerID)
		}
		if n, dup := byServer[r.ServerID]; dup {
			t.Errorf("server %s holds nodes %s and %s", r.ServerID, n, r.NodeUUID)
		}
		byNode[r.NodeUUID], byServer[r.ServerID] = r.ServerID, r.NodeUUID
	}
	w.mu.Lock()
	live := slices.Clone(w.live)
	w.mu.Unlock()
	for _, id := range live {
		node, ok := byServer[id]
		if !ok {
			t.Errorf("server %s holds no node", id)
			continue
		}
		n, err := ir.Node(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		if n.InstanceUUID != id {
			t.Errorf("Ironic's node %s carries instance %q, corral reserved it for %s", node, n.InstanceUUID, id)
		}
	}
	allocs, err := ir.Allocations(ctx, ir.Class("roll"))
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := map[string]string{}
	for _, a := range allocs {
		if a.NodeUUID == "" {
			continue
		}
		if other, dup := nodeOf[a.NodeUUID]; dup {
			t.Errorf("Ironic's node %s has allocations %s and %s", a.NodeUUID, other, a.UUID)
		}
		nodeOf[a.NodeUUID] = a.UUID
		if s, ok := byNode[a.NodeUUID]; ok && s != a.UUID {
			t.Errorf("Ironic's allocation %s on node %s, corral reserved the node for %s", a.UUID, a.NodeUUID, s)
		}
	}
	t.Logf("%d reservations, %d Ironic allocations: no node twice", len(res), len(allocs))
}

// downgrade starts the previous release on an upgraded peer's data dir: it
// must stop with a message naming the entry it cannot apply; this tree's
// binary then starts again on the same data dir.
func downgrade(t *testing.T, c *e2e.Cluster, oldBin, newBin string) {
	t.Helper()
	a := c.Agents[len(c.Agents)-1]
	a.Stop(20 * time.Second)
	before, err := os.ReadFile(a.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	a.Bin = oldBin
	a.Start()
	if !a.Wait(90 * time.Second) {
		t.Fatalf("%s at %s runs on a data dir this tree wrote new command types to: the downgrade was not refused", a.Name, baseCommit)
	}
	after, err := os.ReadFile(a.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	msg := string(after[len(before):])
	i := strings.Index(msg, "unknown command type")
	if i < 0 || !strings.Contains(msg[i:], "upgrade it") {
		i = strings.Index(msg, "snapshot format version")
		if i < 0 || !strings.Contains(msg[i:], "upgrade this peer") {
			t.Fatalf("the downgraded %s stopped without saying why:\n%s", a.Name, msg[max(0, len(msg)-3000):])
		}
	}
	line, _, _ := strings.Cut(msg[i:], "\n")
	t.Logf("the downgrade to %s was refused: %s", baseCommit, line)
	a.Bin = newBin
	a.Start()
	c.AwaitReady(60 * time.Second)
}

// checkLog reads a peer's raft log: every command up to the last old
// peer's stop is of a type the old peers advertised, and the new types
// appear after it; every entry is JSON until the last peer started on
// this tree (the old peers, alive or stopped for their upgrade, read
// nothing else), and msgpack from the moment every peer showed this
// tree's version until the downgrade was tried.
func checkLog(t *testing.T, path, oldCommands string, at logMarks) {
	t.Helper()
	store, err := raftboltdb.NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	counts := map[fsm.CommandType]int{}
	encodings := map[fsm.Encoding]int{}
	newAfter, msgpackAfter, firstMsgpack := 0, 0, uint64(0)
	for i := first; i <= last && i > 0; i++ {
		var e raft.Log
		if err := store.GetLog(i, &e); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if e.Type != raft.LogCommand || len(e.Data) == 0 {
			continue
		}
		enc, typ, err := fsm.EntryEncoding(e.Data)
		if err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		counts[typ]++
		encodings[enc]++
		if enc == fsm.EncodingMsgpack && firstMsgpack == 0 {
			firstMsgpack = i
		}
		known := fsm.CommandKnownIn(oldCommands, typ) || typ.Ignorable()
		switch {
		case i <= at.lastOld && !known:
			t.Errorf("log entry %d is a %s, which the old peers (%s) cannot apply, written before the last of them stopped (at %d)",
				i, typ, oldCommands, at.lastOld)
		case i > at.lastOld && !known:
			newAfter++
		}
		switch {
		case i <= at.lastStart && enc != fsm.EncodingJSON:
			t.Errorf("log entry %d (a %s) is in %s, written before the last old peer started on this tree (at %d)", i, typ, enc, at.lastStart)
		case i > at.upgraded && i <= at.lastNew && enc != fsm.EncodingMsgpack:
			t.Errorf("log entry %d (a %s) is in %s, written after every peer ran this tree (from %d)", i, typ, enc, at.upgraded)
		case i > at.upgraded && i <= at.lastNew:
			msgpackAfter++
		}
	}
	if newAfter == 0 {
		t.Errorf("no entry of a new command type after the upgrade (entries %d-%d, by type %v)", first, last, counts)
	}
	if msgpackAfter == 0 {
		t.Errorf("no msgpack entry after every peer ran this tree (entries %d-%d, upgraded at %d, by encoding %v)",
			first, last, at.upgraded, encodings)
	}
	t.Logf("raft log %d-%d: %d entries of types the old peers lacked, all after %d (the last old peer's stop); by type %v",
		first, last, newAfter, at.lastOld, counts)
	t.Logf("entries by encoding %v: JSON up to %d (the last old peer's start on this tree) and beyond, the first msgpack at %d, "+
		"%d msgpack entries and no other from %d (every peer at this tree's version) to %d", encodings, at.lastStart,
		firstMsgpack, msgpackAfter, at.upgraded, at.lastNew)
}
