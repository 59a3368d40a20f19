package driver

import "errors"

// ErrNotHeld means the server's Ironic node no longer carries the
// server's reservation, so the driver stopped before touching the node.
// When the log already shows that the server moved, the error wraps
// fsm.ErrFenced as well and the owner stops; otherwise the step is
// retried, and a reservation really lost ends the build at its timeout.
var ErrNotHeld = errors.New("the Ironic node no longer carries this server's reservation")

// errRefused marks a side effect Ironic refused (4xx but a lock): nothing
// was done.
var errRefused = errors.New("Ironic refused the request")
