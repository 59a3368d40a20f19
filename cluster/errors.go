package cluster

import (
	"errors"

	"github.com/corral-dev/corral/cluster/forward"
)

// Sentinel errors detected by the cluster layer. The API maps them to HTTP
// status codes; their messages tell an operator what to look at. The
// leadership errors are the forwarding protocol's own, so that errors.Is
// gives the same answer on a follower as on the leader.
var (
	// ErrNoLeader means no leader is known right now (an election is running,
	// or this peer cannot reach a majority).
	ErrNoLeader = forward.ErrNoLeader
	// ErrNotLeader is returned by leader-only operations on a follower.
	ErrNotLeader = forward.ErrNotLeader
	// ErrNotReady means the peer is up but cannot serve the request yet. A
	// follower whose forwarded request meets it on the leader retries.
	ErrNotReady = forward.Unavailable("this peer is not ready")
	// ErrShutdown means the peer is stopping. A follower whose forwarded
	// request meets it on the leader retries.
	ErrShutdown = forward.Unavailable("this peer is shutting down")
	// ErrBadConsistency is returned for an unknown consistency level.
	ErrBadConsistency = errors.New("unknown consistency level: use stale, default or linearizable")

	// ErrNoPeerIdentity: the configuration gives peers no way to prove who
	// they are (neither TLS nor a peer token).
	ErrNoPeerIdentity = errors.New("peers have no identity")
	// ErrNotPeer marks a request to the peers' endpoints that does not
	// come from a peer: no peer certificate (TLS), or not the peer token.
	ErrNotPeer = errors.New("only peers may call this endpoint")
	// ErrPeerToken marks a raft connection whose other end did not prove
	// it holds the peer token (raftauth.go).
	ErrPeerToken = errors.New("the other end does not hold this cluster's peer token")
	// ErrRPCSender marks a raft RPC whose sender (RPCHeader.ID) is not the
	// peer the connection authenticated: a peer speaks raft only in its
	// own name (rpcguard.go).
	ErrRPCSender = errors.New("raft RPC sent in another peer's name")
)

// Operator errors.
var (
	// ErrPeerAlive refuses to remove a peer that gossip shows alive.
	ErrPeerAlive = errors.New("the peer is alive: stop it, or make it leave with `corral leave`, before removing it from raft")
	// ErrUnknownPeer is a remove-peer of a name not in the raft configuration.
	ErrUnknownPeer = errors.New("no such raft server: see `corral raft status` for the voters and non-voters")
	// ErrBadSnapshot marks a snapshot file that cannot be restored.
	ErrBadSnapshot = errors.New("unusable snapshot file")
	// ErrNothingToRecover is a recover on a data dir without raft state.
	ErrNothingToRecover = errors.New("the data dir holds no raft state: run recover on the data dir of a peer that was a member")
	// ErrBadKey is a gossip key that is not base64 of 32 bytes.
	ErrBadKey = errors.New("invalid gossip encryption key: want the base64 encoding of 32 random bytes (make one with `corral keygen`)")
	// ErrEncryptionOff is a keyring operation on a peer without gossip encryption.
	ErrEncryptionOff = errors.New("gossip encryption is off on this peer: set [gossip] encrypt (from `corral keygen`) on every peer and restart them one at a time")
)
