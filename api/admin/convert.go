package admin

import (
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// The state's and the cluster's types as the admin API shows them (the
// wire package's, which import neither), and back for what it takes.
// convert_test.go holds the two to the same JSON.

// memberOf is a member as the admin API shows it.
func memberOf(m cluster.Member) wire.Member {
	return wire.Member{Name: m.Name, Address: m.Address, Status: m.Status, Kind: m.Kind, APIAddr: m.APIAddr,
		RaftAddr: m.RaftAddr, Raft: wire.RaftMember{Suffrage: m.Raft.Suffrage, Leader: m.Raft.Leader},
		Version: m.Version, Commands: m.Commands}
}

// hostView is a host with the number of servers it owns.
func hostView(h fsm.Host, servers int) wire.HostView {
	return wire.HostView{Name: h.Name, RaftAddr: h.RaftAddr, APIAddr: h.APIAddr, GossipAddr: h.GossipAddr, Kind: h.Kind,
		Status: string(h.Status), JoinedAt: h.JoinedAt, ChangedAt: h.ChangedAt, Drained: h.Drained, DrainReason: h.DrainReason,
		Servers: servers}
}

// nodeView is a mirrored Ironic node with the server reserving it.
func nodeView(n fsm.Node, reservedBy string) wire.NodeView {
	return wire.NodeView{UUID: n.UUID, Name: n.Name, ResourceClass: n.ResourceClass, ProvisionState: n.ProvisionState,
		PowerState: n.PowerState, Maintenance: n.Maintenance, Properties: n.Properties, Capabilities: n.Capabilities,
		Traits: n.Traits, InstanceUUID: n.InstanceUUID, AllocationUUID: n.AllocationUUID, Missing: n.Missing,
		LastSeen: n.LastSeen, InventoryConflict: n.InventoryConflict, ConflictSince: n.ConflictSince, ReservedBy: reservedBy}
}

// keyringStatus is a member's keyring as the admin API shows it.
func keyringStatus(st cluster.KeyringStatus) wire.KeyringStatus {
	return wire.KeyringStatus{Peer: st.Peer, Primary: st.Primary, Keys: st.Keys}
}

// snapshotHeader is a snapshot's header as the admin API shows it.
func snapshotHeader(h cluster.SnapshotHeader) wire.SnapshotHeader {
	return wire.SnapshotHeader{Index: h.Index, Term: h.Term, Size: h.Size, SHA256: h.SHA256, TakenAt: h.TakenAt,
		TakenBy: h.TakenBy, Digest: h.Digest}
}

// adoptedFlavor is the flavor of an adoption in the state's terms.
func adoptedFlavor(f wire.AdoptedFlavor) fsm.Flavor {
	return fsm.Flavor{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, Ephemeral: f.Ephemeral, Swap: f.Swap,
		RxTxFactor: f.RxTxFactor, IsPublic: f.IsPublic, Description: f.Description, ExtraSpecs: f.ExtraSpecs, Access: f.Access,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// raftStatus is this peer's view of raft as the admin API shows it.
func raftStatus(st cluster.RaftStatus) wire.RaftStatus {
	return wire.RaftStatus{Name: st.Name, State: st.State, Leader: st.Leader, LeaderAddr: st.LeaderAddr,
		Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LastIndex: st.LastIndex,
		LastSnapshotIndex: st.LastSnapshotIndex, LastContact: st.LastContact, Voters: st.Voters, Nonvoters: st.Nonvoters}
}

// reservation is a node reservation as the admin API shows it.
func reservation(r fsm.Reservation) wire.Reservation {
	return wire.Reservation{NodeUUID: r.NodeUUID, ServerID: r.ServerID, Host: r.Host, AllocationUUID: r.AllocationUUID}
}

// move is one move of a plan as the admin API shows it.
func move(m fsm.Move) wire.Move {
	return wire.Move{ServerID: m.ServerID, FromHost: m.FromHost, FromEpoch: m.FromEpoch, ToHost: m.ToHost}
}
