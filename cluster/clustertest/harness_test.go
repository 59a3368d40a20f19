package clustertest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// status is how peer p's gossip sees member name.
func status(p *clustertest.Peer, name string) string {
	for _, m := range p.Node.Members() {
		if m.Name == name {
			return m.Status
		}
	}
	return "absent"
}

// waitStatus waits until every peer in from sees name with the status.
func waitStatus(t *testing.T, from []*clustertest.Peer, name, want string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, p := range from {
			if got := status(p, name); got != want {
				return fmt.Errorf("%s sees %s %s, want %s", p.Name, name, got, want)
			}
		}
		return nil
	})
}

func TestPartitionCutsGossipAndRaft(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	cut := h.Followers(leader)[0]
	var rest []*clustertest.Peer
	for _, p := range h.Running() {
		if p != cut {
			rest = append(rest, p)
		}
	}
	waitStatus(t, rest, cut.Name, cluster.MemberAlive)

	h.Partition(cut.Name)
	waitStatus(t, rest, cut.Name, cluster.MemberDead)
	for _, p := range rest {
		waitStatus(t, []*clustertest.Peer{cut}, p.Name, cluster.MemberDead)
	}

	h.Heal(cut.Name)
	waitStatus(t, rest, cut.Name, cluster.MemberAlive)
	for _, p := range rest {
		waitStatus(t, []*clustertest.Peer{cut}, p.Name, cluster.MemberAlive)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if st := cut.Node.RaftStatus(); st.Leader == "" || st.Leader == cut.Name {
			return fmt.Errorf("healed peer's raft leader is %q", st.Leader)
		}
		return nil
	})
}

func TestCutRaftKeepsGossip(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	cut := h.Followers(leader)[0]
	waitStatus(t, []*clustertest.Peer{leader}, cut.Name, cluster.MemberAlive)
	// Only a voter campaigns when it loses its leader.
	testkit.Eventually(t, 10*time.Second, func() error {
		st := cut.Node.RaftStatus()
		for _, v := range st.Voters {
			if v == cut.Name && st.Leader != "" && st.Leader != cut.Name {
				return nil
			}
		}
		return fmt.Errorf("%s is not yet a voter following a leader: %+v", cut.Name, st)
	})
	h.CutRaft(cut.Name)
	testkit.Eventually(t, 10*time.Second, func() error {
		if st := cut.Node.RaftStatus(); st.State != "candidate" {
			return fmt.Errorf("peer cut from raft is %s, want candidate", st.State)
		}
		return nil
	})
	if got := status(leader, cut.Name); got != cluster.MemberAlive {
		t.Errorf("leader sees the raft-cut peer %s, want alive", got)
	}
	h.Heal(cut.Name)
	h.Leader(10 * time.Second)
}
