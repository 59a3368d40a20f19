package fsm

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
)

// hostCountFixture is the bare-metal fixture with a third ironic host.
func hostCountFixture(t *testing.T) *applier {
	a := bareMetalFixture(t)
	a.ok(&RegisterHost{Meta: at(0), Name: "h3", Kind: KindIronic})
	return a
}

func fixtureNode(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i) }

// runRandomCommands applies n random commands that move servers between
// hosts, statuses and nodes, and nodes in and out of inventory conflicts,
// checking the maintained indexes against a recount after each one. It
// returns how many commands of each type succeeded.
func runRandomCommands(t *testing.T, a *applier, r *rand.Rand, n int) map[CommandType]int {
	t.Helper()
	hosts := []string{"h1", "h2", "h3"}
	classes := []string{"baremetal-gold", "baremetal-silver"}
	ok := map[CommandType]int{}
	servers := func() []Server { return a.s.Servers() }
	pick := func() (Server, bool) {
		ss := servers()
		if len(ss) == 0 {
			return Server{}, false
		}
		return ss[r.IntN(len(ss))], true
	}
	for i := range n {
		sec := 100 + i
		var c Command
		switch k := r.IntN(14); k {
		case 0, 1:
			cs := &CreateServer{Meta: at(sec), ID: sid(r.IntN(40)), Name: "s", FlavorID: "bm", ImageRef: "img",
				Host: hosts[r.IntN(len(hosts))]}
			if r.IntN(2) == 0 {
				cs.Claim = map[string]map[string]int64{fixtureNode(r.IntN(10)): {"CUSTOM_BAREMETAL_GOLD": 1}}
			}
			if r.IntN(8) == 0 {
				cs.Host = "" // no valid host: recorded in ERROR, without owner
			}
			c = cs
		case 2:
			s, found := pick()
			if !found {
				continue
			}
			st := []ServerStatus{"", StatusActive, StatusError, StatusDeleted}[r.IntN(4)]
			c = &SetServerTask{Meta: at(sec), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Status: st}
		case 3:
			s, found := pick()
			if !found {
				continue
			}
			c = &DeleteServer{Meta: at(sec), ID: s.ID}
		case 4:
			s, found := pick()
			if !found {
				continue
			}
			node := s.ClaimedNode
			if node == "" {
				node = fixtureNode(r.IntN(10))
			}
			c = &ReserveNode{Meta: at(sec), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: node}
		case 5:
			s, found := pick()
			if !found {
				continue
			}
			c = &ReleaseNode{Meta: at(sec), ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.NodeUUID}
		case 6:
			s, found := pick()
			if !found {
				continue
			}
			c = &ReassignServers{Meta: at(sec), Reason: ReasonAdminMove,
				Moves: []Move{{ServerID: s.ID, FromHost: s.Host, FromEpoch: s.Epoch, ToHost: hosts[r.IntN(len(hosts))]}}}
		case 7:
			c = &SetHostStatus{Meta: at(sec), Name: hosts[r.IntN(len(hosts))], Status: []HostStatus{HostUp, HostUp, HostDown}[r.IntN(3)]}
		case 8:
			c = &SetHostDrain{Meta: at(sec), Name: hosts[r.IntN(len(hosts))], Drained: r.IntN(3) == 0}
		case 9:
			f := testFlavor("bm", "bare-metal-gold")
			c = &AdoptServer{Meta: at(sec), ID: sid(40 + r.IntN(10)), Name: "adopted", Flavor: f, ImageRef: "img",
				NodeUUID: fixtureNode(r.IntN(10)), Host: hosts[r.IntN(len(hosts))]}
		case 10:
			var ids []string
			for _, s := range servers() {
				if s.Status == StatusDeleted && r.IntN(2) == 0 {
					ids = append(ids, s.ID)
				}
			}
			c = &PurgeServers{Meta: at(sec), Before: at(sec).At, IDs: ids}
		case 11:
			s, found := pick()
			if !found {
				continue
			}
			kind := []string{ActionStop, ActionStart, ActionRebootHard}[r.IntN(3)]
			if s.Action != nil {
				c = &FinishServerAction{Meta: at(sec), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: s.Action.Kind}
			} else {
				c = &RequestServerAction{Meta: at(sec), ID: s.ID, Kind: kind}
			}
		case 12, 13:
			// Node changes: a claimed node changing class conflicts
			// (its inventory is in use); the legacy switch flips.
			var ups []Node
			for range 1 + r.IntN(3) {
				ups = append(ups, Node{UUID: fixtureNode(r.IntN(10)), ResourceClass: classes[r.IntN(len(classes))],
					ProvisionState: "available", PowerState: "power off",
					Properties: map[string]string{"cpus": "64", "memory_mb": "131072", "local_gb": "371"}})
			}
			sn := &SyncNodes{Meta: at(sec), Upserts: ups}
			if r.IntN(6) == 0 {
				sn.Missing = []string{fixtureNode(r.IntN(10))}
			}
			if r.IntN(10) == 0 {
				legacy := r.IntN(2) == 0
				sn.LegacyInventory = &legacy
			}
			c = sn
		}
		if res := a.apply(c); res.Err == nil {
			ok[c.Type()]++
		}
		checkIndexes(t, a.s)
		if _, isSync := c.(*SyncNodes); isSync {
			a.s.mu.RLock()
			exact := conflictedNodes(a.s.st)
			same := maps.Equal(exact, a.s.st.conflicted)
			a.s.mu.RUnlock()
			if !same {
				t.Fatalf("after a node sync the conflicted set is not exact: %v", exact)
			}
		}
	}
	return ok
}

func conflictedNodes(st *state) map[string]struct{} {
	out := map[string]struct{}{}
	for id, n := range st.nodes {
		if n.InventoryConflict != "" {
			out[id] = struct{}{}
		}
	}
	return out
}

// checkIndexes compares the maintained host counts with a recount, and
// checks that the conflicted set holds every conflicted node (and only
// mirrored nodes).
func checkIndexes(t *testing.T, s *Store) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if want := recountHosts(s.st.servers); !maps.Equal(s.st.hostServers, want) {
		t.Fatalf("host counts %v, recount %v", s.st.hostServers, want)
	}
	checkQuotaUsage(t, s.st)
	checkServerIndex(t, s.st)
	for id := range conflictedNodes(s.st) {
		if _, ok := s.st.conflicted[id]; !ok {
			t.Fatalf("node %s has an inventory conflict but is not in the conflicted set", id)
		}
	}
	for id := range s.st.conflicted {
		if _, ok := s.st.nodes[id]; !ok {
			t.Fatalf("conflicted set holds %s, which is not mirrored", id)
		}
	}
}

// After random sequences of commands, and after a snapshot restore, the
// maintained host counts equal a recount and the conflicted set holds
// every conflicted node.
func TestMaintainedIndexesMatchRecount(t *testing.T) {
	total := map[CommandType]int{}
	conflicts := 0
	for seed := uint64(1); seed <= 12; seed++ {
		a := hostCountFixture(t)
		ok := runRandomCommands(t, a, rand.New(rand.NewPCG(seed, 42)), 400)
		for k, v := range ok {
			total[k] += v
		}
		a.s.mu.RLock()
		conflicts += len(conflictedNodes(a.s.st))
		a.s.mu.RUnlock()

		r := New()
		if err := r.Restore(bytes.NewReader(snapshotBytes(t, a.s))); err != nil {
			t.Fatal(err)
		}
		checkIndexes(t, r)
		r.mu.RLock()
		same := maps.Equal(r.st.hostServers, a.s.st.hostServers)
		r.mu.RUnlock()
		if !same {
			t.Fatalf("seed %d: restored host counts differ", seed)
		}
		// The restored store goes on as the original does.
		more := func(s *Store) *applier { return &applier{tb: t, s: s, index: s.AppliedIndex()} }
		runRandomCommands(t, more(a.s), rand.New(rand.NewPCG(seed, 43)), 100)
		runRandomCommands(t, more(r), rand.New(rand.NewPCG(seed, 43)), 100)
		if a.s.Digest() != r.Digest() {
			t.Fatalf("seed %d: the restored store diverged", seed)
		}
	}
	// The sequences must exercise what moves the counts.
	for _, ct := range []CommandType{CmdCreateServer, CmdSetServerTask, CmdDeleteServer, CmdReassignServers,
		CmdAdoptServer, CmdPurgeServers, CmdReserveNode, CmdReleaseNode, CmdSyncNodes, CmdRequestServerAction} {
		if total[ct] == 0 {
			t.Errorf("no %s succeeded: the random commands exercise too little", ct)
		}
	}
	if conflicts == 0 {
		t.Error("no sequence ended with an inventory conflict: the conflicted set went untested")
	}
}

func TestHostLoadIsACopy(t *testing.T) {
	a := hostCountFixture(t)
	a.ok(&CreateServer{Meta: at(1), ID: sid(1), Name: "s", FlavorID: "bm", ImageRef: "img", Host: "h2"})
	a.s.mu.RLock()
	load := hostLoad(a.s.st)
	a.s.mu.RUnlock()
	if !reflect.DeepEqual(load, map[string]int{"h2": 1}) {
		t.Fatalf("load %v", load)
	}
	load["h2"] = 99
	if got := a.s.HostLoad()["h2"]; got != 1 {
		t.Fatalf("changing the returned load changed the state's count to %d", got)
	}
}

func TestSortedIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, gen := range []func() string{
		func() string { return sid(r.IntN(1 << 20)) },
		func() string { return fmt.Sprintf("%x", r.Uint64()>>r.IntN(64)) },
		func() string { return string([]byte{byte(r.IntN(3)), 0, byte(r.IntN(2))})[:1+r.IntN(3)] },
		func() string { return fmt.Sprintf("node-%d", r.IntN(5000)) + string(make([]byte, r.IntN(20))) },
	} {
		for _, n := range []int{0, 1, 2, 3, 50, 3000} {
			m := map[string]int{}
			for range n {
				m[gen()] = 1
			}
			if got, want := sortedIDs(m), sortedKeys(m); !reflect.DeepEqual(got, want) && len(want) > 0 {
				t.Fatalf("sortedIDs of %d keys differs from sortedKeys", len(m))
			}
		}
	}
}
