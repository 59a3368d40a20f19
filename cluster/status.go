package cluster

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/hashicorp/raft"
)

// RaftMember is a member's place in the raft configuration.
type RaftMember struct {
	Suffrage string `json:"suffrage"` // voter, nonvoter or none
	Leader   bool   `json:"leader"`
}

// Member is one peer as this peer sees it: gossip status plus raft role.
type Member struct {
	Name     string     `json:"name"`
	Address  string     `json:"address"` // gossip address
	Status   string     `json:"status"`  // alive, dead, left (gossip) or unknown
	Kind     string     `json:"kind,omitempty"`
	APIAddr  string     `json:"api_address,omitempty"`
	RaftAddr string     `json:"raft_address,omitempty"`
	Raft     RaftMember `json:"raft"`
	// Version is the member's corral release and Commands the command
	// types it can apply, as it advertises them in gossip (empty for a
	// peer of a release that advertised neither).
	Version  string `json:"version,omitempty"`
	Commands string `json:"commands,omitempty"`
}

// Members lists gossip members and raft servers, sorted by name. A raft
// server that gossip has never seen is listed with status "unknown".
func (n *Node) Members() []Member {
	byName := map[string]*Member{}
	for _, m := range n.gossip.snapshot() {
		byName[m.Name] = &Member{Name: m.Name, Address: m.Addr, Status: m.Status, Kind: m.Meta.Kind,
			APIAddr: m.Meta.APIAddr, RaftAddr: m.Meta.RaftAddr, Raft: RaftMember{Suffrage: "none"},
			Version: m.Meta.Settings[settingVersion], Commands: m.Meta.Settings[settingCommands]}
	}
	_, leader := n.raft.LeaderWithID()
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			m, ok := byName[string(s.ID)]
			if !ok {
				m = &Member{Name: string(s.ID), Status: "unknown", RaftAddr: string(s.Address)}
				byName[string(s.ID)] = m
			}
			m.Raft.Suffrage = "voter"
			if s.Suffrage != raft.Voter {
				m.Raft.Suffrage = "nonvoter"
			}
			m.Raft.Leader = s.ID == leader
		}
	}
	out := make([]Member, 0, len(byName))
	for _, m := range byName {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RaftStatus is this peer's view of raft.
type RaftStatus struct {
	Name              string   `json:"name"`
	State             string   `json:"state"`
	Leader            string   `json:"leader"`
	LeaderAddr        string   `json:"leader_address"`
	Term              uint64   `json:"term"`
	CommitIndex       uint64   `json:"commit_index"`
	AppliedIndex      uint64   `json:"applied_index"`
	LastIndex         uint64   `json:"last_index"`
	LastSnapshotIndex uint64   `json:"last_snapshot_index"`
	LastContact       string   `json:"last_contact"`
	Voters            []string `json:"voters"`
	Nonvoters         []string `json:"nonvoters"`
}

// RaftStatus returns this peer's view of raft.
func (n *Node) RaftStatus() RaftStatus {
	addr, id := n.raft.LeaderWithID()
	st := RaftStatus{
		Name:         n.cfg.Name,
		State:        stateName(n.raft.State()),
		Leader:       string(id),
		LeaderAddr:   string(addr),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.store.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
		Voters:       []string{},
		Nonvoters:    []string{},
	}
	stats := n.raft.Stats()
	st.LastSnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	st.LastContact = stats["last_contact"]
	voters, nonvoters := n.suffrage()
	for _, s := range voters {
		st.Voters = append(st.Voters, string(s.ID))
	}
	for _, s := range nonvoters {
		st.Nonvoters = append(st.Nonvoters, string(s.ID))
	}
	sort.Strings(st.Voters)
	sort.Strings(st.Nonvoters)
	return st
}

// Check is one readiness check.
type Check struct {
	Name string
	OK   bool
	Info string
}

// maxApplyLag is how far this peer's FSM may trail the commit index and
// still be ready.
const maxApplyLag = 256

// Ready runs the readiness checks: a leader is known (and, on the
// leader, its first entry of the term is committed), gossip is joined,
// and the FSM is caught up with the commit index.
func (n *Node) Ready() []Check {
	var checks []Check
	_, leader := n.raft.LeaderWithID()
	switch {
	case n.leaving.Load():
		checks = append(checks, Check{"raft", false, "leaving the cluster"})
	case leader == "":
		checks = append(checks, Check{"raft", false, "no leader known"})
	case n.IsLeader() && n.readyTerm.Load() != n.raft.CurrentTerm():
		checks = append(checks, Check{"raft", false, "leader has not committed its first entry of this term"})
	default:
		checks = append(checks, Check{"raft", true, fmt.Sprintf("leader %s, term %d", leader, n.raft.CurrentTerm())})
	}
	alive := 0
	for _, m := range n.counted(n.gossip.snapshot()) {
		if m.Status == MemberAlive {
			alive++
		}
	}
	gossipOK := alive > 1 || (len(n.cfg.Join) == 0 && n.cfg.BootstrapExpect <= 1)
	checks = append(checks, Check{"gossip", gossipOK, fmt.Sprintf("%d alive members", alive)})
	commit, applied := n.raft.CommitIndex(), n.store.AppliedIndex()
	lagOK := commit < applied+maxApplyLag
	checks = append(checks, Check{"fsm", lagOK, fmt.Sprintf("applied %d of %d", applied, commit)})
	return checks
}
