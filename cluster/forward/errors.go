package forward

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/fsm"
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

// WireError is an error as it crosses from leader to follower.
type WireError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Error kinds on the wire. Their strings are part of the protocol between
// peers of different versions: never change one, only add.
const (
	kindNotFound  = "not_found"
	kindConflict  = "conflict"
	kindFenced    = "fenced"
	kindQuota     = "quota_exceeded"
	kindInvalid   = "invalid"
	kindNotLeader = "not_leader"
	kindNoLeader  = "no_leader"
	kindInternal  = "internal"
)

// kinds maps each kind to its sentinel, most specific first (a fenced
// error is also a conflict).
var kinds = []struct {
	kind   string
	err    error
	status int
}{
	{kindNotFound, fsm.ErrNotFound, http.StatusNotFound},
	{kindFenced, fsm.ErrFenced, http.StatusConflict},
	{kindQuota, fsm.ErrQuotaExceeded, http.StatusForbidden},
	{kindConflict, fsm.ErrConflict, http.StatusConflict},
	{kindInvalid, fsm.ErrInvalid, http.StatusBadRequest},
	{kindNotLeader, ErrNotLeader, http.StatusServiceUnavailable},
	{kindNoLeader, ErrNoLeader, http.StatusServiceUnavailable},
	{kindNoLeader, ErrUnavailable, http.StatusServiceUnavailable},
}

// toWire classifies err for the wire and picks the status the handler
// answers with.
func toWire(err error) (*WireError, int) {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return &WireError{Kind: k.kind, Message: err.Error()}, k.status
		}
	}
	return &WireError{Kind: kindInternal, Message: err.Error()}, http.StatusInternalServerError
}

// fromWire rebuilds a leader's error on the follower: business errors keep
// the leader's message and their sentinel; leadership errors become the
// bare sentinels this peer retries on. from names the answer of any other
// kind ("leader at host:port answered 500").
func fromWire(we *WireError, from string) error {
	switch we.Kind {
	case kindNotLeader:
		return ErrNotLeader
	case kindNoLeader:
		return ErrNoLeader
	}
	for _, k := range kinds {
		if k.kind == we.Kind {
			return &wireError{base: k.err, msg: we.Message}
		}
	}
	return fmt.Errorf("%s: %s", from, we.Message)
}

// wireError keeps the leader's message verbatim and the sentinel for errors.Is.
type wireError struct {
	base error
	msg  string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.base }
