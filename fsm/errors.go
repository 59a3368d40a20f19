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
	// ErrUnknownEncoding: a log entry in an encoding this peer does not
	// read (codec_binary.go).
	ErrUnknownEncoding = errors.New("unknown entry encoding")
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

// ErrQuotaExceeded is returned by Apply when a create would take a
// project or user over one of its quotas (quota_check.go); the message is
// Nova's, and the API answers 403 with it. It is a kind of ErrConflict.
var ErrQuotaExceeded = fmt.Errorf("%w: quota exceeded", ErrConflict)
