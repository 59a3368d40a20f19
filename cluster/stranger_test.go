package cluster_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// strangerMeta is gossip metadata as a peer's looks, but unsealed.
func strangerMeta(expect int, boot bool, settings string) []byte {
	return []byte(fmt.Sprintf(`{"v":1,"raft":"127.0.0.1:1","api":"stranger.api:1","kind":"ironic","expect":%d,"boot":%v,"set":{%s}}`, expect, boot, settings))
}

// seenAlive waits until every running peer's gossip shows member alive.
func seenAlive(t *testing.T, h *clustertest.Harness, member string) {
	t.Helper()
	for _, p := range h.Running() {
		testkit.Eventually(t, 10*time.Second, func() error {
			for _, m := range p.Node.Members() {
				if m.Name == member && m.Status == cluster.MemberAlive {
					return nil
				}
			}
			return fmt.Errorf("%s does not see %s alive in gossip", p.Name, member)
		})
	}
}

func raftServers(p *clustertest.Peer) []string {
	st := p.Node.RaftStatus()
	out := append(append([]string{}, st.Voters...), st.Nonvoters...)
	sort.Strings(out)
	return out
}

// A stranger that reaches the gossip port without the peer token counts
// nowhere: not in the settings every peer must agree on, not in the
// command types every peer knows, not as a peer to call, not as a host or
// a raft server.
func TestStrangerCountsNowhere(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	for _, p := range h.Running() {
		testkit.Eventually(t, 10*time.Second, func() error {
			if !p.Node.CommandKnown(fsm.CmdCreateServers) {
				return fmt.Errorf("%s: the peers do not all know CreateServers yet", p.Name)
			}
			return nil
		})
	}
	meta := strangerMeta(0, true, `"fsm_commands":"1","fsm_purge_servers":"false"`)
	clustertest.StartStranger(t, "stranger", meta, leader.Node.GossipAddr())
	seenAlive(t, h, "stranger")
	for _, p := range h.Running() {
		if !p.Node.CommandKnown(fsm.CmdCreateServers) {
			t.Errorf("%s: a stranger that advertises command types 1 stops the use of CreateServers", p.Name)
		}
		if v, ok := p.Node.AgreedSetting("", "fsm_purge_servers"); !ok || v != "true" {
			t.Errorf("%s: a stranger vetoes a setting every peer agrees on: %q %v", p.Name, v, ok)
		}
		if api, ok := p.Node.PeerAPIs()["stranger"]; ok {
			t.Errorf("%s: the stranger's API %s is called as a peer's", p.Name, api)
		}
	}
	// A reconcile that saw the stranger: the one that registers a peer
	// started after it.
	h.Add("p4", 0)
	testkit.Eventually(t, 20*time.Second, func() error {
		if _, err := leader.Node.Store().Host("p4"); err != nil {
			return fmt.Errorf("p4 is no host yet: %w", err)
		}
		if !slices.Contains(raftServers(leader), "p4") {
			return fmt.Errorf("p4 is not in raft yet: %v", raftServers(leader))
		}
		return nil
	})
	if hst, err := leader.Node.Store().Host("stranger"); err == nil {
		t.Errorf("the stranger is a host: %+v", hst)
	}
	if s := raftServers(leader); slices.Contains(s, "stranger") {
		t.Errorf("the stranger is a raft server: %v", s)
	}
}

// Strangers take no part in bootstrap_expect: one that expects the same
// number does not make it up, one that expects another does not stop it,
// one that claims to be bootstrapped does not make the peers wait.
func TestStrangersDoNotCountInBootstrap(t *testing.T) {
	var join []string
	for i, meta := range [][]byte{strangerMeta(3, false, ""), strangerMeta(5, false, ""), strangerMeta(0, true, "")} {
		s := clustertest.StartStranger(t, fmt.Sprintf("stranger%d", i), meta, join...)
		join = append(join, s.Addr())
	}
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(cfg *cluster.Config) { cfg.Join = append(cfg.Join, join...) }})
	leader := h.Leader(20 * time.Second)
	if got := raftServers(leader); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("raft servers after bootstrap: %v, want p1 p2 p3", got)
	}
}
