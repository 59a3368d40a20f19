package forward

import (
	"errors"
	"fmt"
)

// Errors of the forwarding protocol. A follower retries on ErrNoLeader,
// ErrNotLeader and ErrNotDelivered: in each the request was certainly not
// applied. The cluster package re-exports the first two as its own.
var (
	// ErrNoLeader means no leader is known right now (an election is
	// running, or this peer cannot reach a majority).
	ErrNoLeader = errors.New("no raft leader is known: an election may be in progress, or this peer cannot reach a majority of peers (check `corral members` and `corral raft status`)")
	// ErrNotLeader is returned by leader-only operations on a follower.
	ErrNotLeader = errors.New("this peer is not the raft leader")
	// ErrNotDelivered marks a forwarding failure where the request never
	// reached the leader, so retrying cannot apply a write twice.
	ErrNotDelivered = errors.New("request not delivered to the leader")
	// ErrUnavailable marks a leader that cannot take a request right now
	// (it is shutting down, or its raft queue is full). It crosses the wire
	// as "no leader", so that the follower retries; see Unavailable.
	ErrUnavailable = errors.New("the leader cannot take requests right now")
)

// Unavailable returns an error with message msg that is ErrUnavailable
// for errors.Is. The cluster package declares its "shutting down" and
// "not ready" sentinels with it.
func Unavailable(msg string) error { return &unavailable{msg: msg} }

type unavailable struct{ msg string }

func (e *unavailable) Error() string { return e.msg }
func (e *unavailable) Unwrap() error { return ErrUnavailable }

// PeerError is another peer's refusal of a Call: the status it answered
// with and its message, for the caller to map to its own errors.
type PeerError struct {
	API     string // the peer's API address
	Status  int
	Message string
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("peer at %s answered %d: %s", e.API, e.Status, e.Message)
}
