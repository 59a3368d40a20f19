package api

import (
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
)

// The paths of the endpoints that others call by name: the operator's
// (the CLI), and the peers' (another peer; PeerPaths gives the cluster
// those it calls). The route table (routes.go) serves them with the rest.
const (
	// KeyringPath is the operator endpoint of the gossip keyring.
	KeyringPath = "/v1/operator/keyring"
	// RemovePeerPath is the operator endpoint that removes a raft server.
	RemovePeerPath = "/v1/operator/raft/remove-peer"
	// SnapshotPath is the operator endpoint of backups: GET saves, POST
	// restores.
	SnapshotPath = "/v1/operator/snapshot"

	// PeerPathPrefix is where the peers' endpoints live: only a peer's
	// identity passes (peers.go).
	PeerPathPrefix = "/v1/internal/"
	// ApplyPath is where a follower forwards a write to the leader.
	ApplyPath = PeerPathPrefix + "apply"
	// ReadIndexPath is where a follower asks the leader for a read index.
	ReadIndexPath = PeerPathPrefix + "read-index"
	// PeerKeyringPath is where a peer applies to itself alone a keyring
	// operation another peer relays from KeyringPath.
	PeerKeyringPath = PeerPathPrefix + "keyring"
	// PeerRemovePeerPath is where a follower passes a removal on to the
	// leader (the user was authorized by the follower).
	PeerRemovePeerPath = PeerPathPrefix + "remove-peer"
	// PeerSnapshotPath is where a follower passes a snapshot request on to
	// the leader (the user was authorized by the follower).
	PeerSnapshotPath = PeerPathPrefix + "snapshot"
)

// forwardPaths are the two endpoints of forwarding (cluster/forward).
var forwardPaths = forward.Paths{Apply: ApplyPath, ReadIndex: ReadIndexPath}

// PeerPaths are the peers' endpoints a peer calls on another peer's API:
// the wiring gives them to the cluster (cluster.Config.PeerPaths).
func PeerPaths() cluster.PeerPaths {
	return cluster.PeerPaths{Paths: forwardPaths, Snapshot: PeerSnapshotPath, RemovePeer: PeerRemovePeerPath}
}
