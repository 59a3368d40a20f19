package wire

// MembersResponse is the body of GET /v1/cluster/members.
type MembersResponse struct {
	Members []Member `json:"members"`
}

// Member is one peer as the answering peer sees it: gossip status plus
// raft role.
type Member struct {
	Name     string     `json:"name"`
	Address  string     `json:"address"` // gossip address
	Status   string     `json:"status"`  // alive, dead, left (gossip) or unknown
	Kind     string     `json:"kind,omitempty"`
	APIAddr  string     `json:"api_address,omitempty"`
	RaftAddr string     `json:"raft_address,omitempty"`
	Raft     RaftMember `json:"raft"`
	// Version is the member's corral release and Commands the command
	// types it can apply ("1-27,32-33,40"), as it advertises them in
	// gossip; empty for a peer of a release that advertised neither.
	Version  string `json:"version,omitempty"`
	Commands string `json:"commands,omitempty"`
}

// RaftMember is a member's place in the raft configuration.
type RaftMember struct {
	Suffrage string `json:"suffrage"` // voter, nonvoter or none
	Leader   bool   `json:"leader"`
}

// RaftStatus is the body of GET /v1/cluster/raft: the answering peer's
// view of raft.
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

// LeaveResponse is the answer to POST /v1/agent/leave.
type LeaveResponse struct {
	Peer   string `json:"peer"`
	Status string `json:"status"` // leaving
}
