package api

import (
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
)

// The peers' endpoints (api/core/peer_paths.go), named here for the
// wiring and the tests; the operator's are in package wire.
const (
	PeerPathPrefix     = core.PeerPathPrefix
	ApplyPath          = core.ApplyPath
	ReadIndexPath      = core.ReadIndexPath
	PeerKeyringPath    = core.PeerKeyringPath
	PeerRemovePeerPath = core.PeerRemovePeerPath
	PeerSnapshotPath   = core.PeerSnapshotPath
)

// PeerPaths are the peers' endpoints a peer calls on another peer's API:
// the wiring gives them to the cluster (cluster.Config.PeerPaths).
func PeerPaths() cluster.PeerPaths {
	return cluster.PeerPaths{Paths: core.ForwardPaths, Snapshot: core.PeerSnapshotPath, RemovePeer: core.PeerRemovePeerPath}
}
