package compute

import (
	"errors"
	"fmt"
)

// ErrStop ends a worker quietly: the server needs nothing more from us.
var ErrStop = errors.New("nothing to do")

// ErrAwaiting, returned by Build or Delete (through Handle.Await), ends a
// worker without an outcome: the backend is carrying out a long step (a
// bare-metal deploy takes minutes) and the driver's own watcher calls
// Handle.Wake when it ends. The server holds no worker meanwhile, so a
// host's worker count bounds the short steps in progress, not the
// deploys.
var ErrAwaiting = errors.New("waiting for the backend")

// ErrIntent means the intent of a side effect was not committed at the
// owner's epoch (refused as stale, or no answer from the leader): the side
// effect was not taken, and the worker stops. The manager starts a new
// worker for the server later, which reads the log and the backend again;
// the side effect itself is never retried blindly.
var ErrIntent = errors.New("the intent was not committed; the side effect was not taken")

// PermanentError ends a build in ERROR with its message as the fault.
type PermanentError struct{ Msg string }

func (e *PermanentError) Error() string { return e.Msg }

// Permanent returns a PermanentError.
func Permanent(format string, args ...any) error {
	return &PermanentError{Msg: fmt.Sprintf(format, args...)}
}
