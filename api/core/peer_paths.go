package core

import "github.com/corral-dev/corral/cluster/forward"

// The paths of the peers' endpoints (RolePeer): a peer calls them on
// another peer's API; only a peer's identity passes (peers.go).
const (
	// PeerPathPrefix is where the peers' endpoints live.
	PeerPathPrefix = "/v1/internal/"
	// ApplyPath is where a follower forwards a write to the leader.
	ApplyPath = PeerPathPrefix + "apply"
	// ReadIndexPath is where a follower asks the leader for a read index.
	ReadIndexPath = PeerPathPrefix + "read-index"
	// PeerKeyringPath is where a peer applies to itself alone a keyring
	// operation another peer relays from the operator's keyring endpoint.
	PeerKeyringPath = PeerPathPrefix + "keyring"
	// PeerRemovePeerPath is where a follower passes a removal on to the
	// leader (the user was authorized by the follower).
	PeerRemovePeerPath = PeerPathPrefix + "remove-peer"
	// PeerSnapshotPath is where a follower passes a snapshot request on to
	// the leader (the user was authorized by the follower).
	PeerSnapshotPath = PeerPathPrefix + "snapshot"
)

// ForwardPaths are the two endpoints of forwarding (cluster/forward).
var ForwardPaths = forward.Paths{Apply: ApplyPath, ReadIndex: ReadIndexPath}
