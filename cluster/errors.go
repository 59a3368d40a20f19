package cluster

import "errors"

// Sentinel errors detected by the cluster layer. The API maps them to HTTP
// status codes; their messages tell an operator what to look at.
var (
	// ErrNoLeader means no leader is known right now (an election is running,
	// or this peer cannot reach a majority).
	ErrNoLeader = errors.New("no raft leader is known: an election may be in progress, or this peer cannot reach a majority of peers (check `corral members` and `corral raft status`)")
	// ErrNotLeader is returned by leader-only operations on a follower.
	ErrNotLeader = errors.New("this peer is not the raft leader")
	// ErrNotReady means the peer is up but cannot serve the request yet.
	ErrNotReady = errors.New("this peer is not ready")
	// ErrShutdown means the peer is stopping.
	ErrShutdown = errors.New("this peer is shutting down")
	// ErrBadConsistency is returned for an unknown consistency level.
	ErrBadConsistency = errors.New("unknown consistency level: use stale, default or linearizable")
)
