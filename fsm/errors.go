package fsm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of them; test with
// errors.Is.
var (
	ErrNotFound       = errors.New("not found")
	ErrConflict       = errors.New("conflict")
	ErrInvalid        = errors.New("invalid")
	ErrUnknownCommand = errors.New("unknown command type")
)

// ErrFenced is returned when a command carries an owner epoch (or owner)
// that is no longer the server's: the sender lost the server and must stop
// touching it. It is a kind of ErrConflict.
var ErrFenced = fmt.Errorf("%w: stale owner epoch", ErrConflict)

// ErrStaleDecision is returned by Apply when a decision the leader took (a
// placement, a claim, an owner) no longer holds when its entry applies,
// because an entry committed in between (a node sync, a host going down)
// took what it chose. The leader decides again; it never reaches a user.
var ErrStaleDecision = fmt.Errorf("%w: the leader's decision is stale", ErrConflict)

// ErrMetadataLimit is returned when a server would hold more metadata
// items than its project may (Nova's metadata_items quota; Nova answers
// 403). It is a kind of ErrInvalid.
var ErrMetadataLimit = fmt.Errorf("%w: too many metadata items", ErrInvalid)
