package proc

import "errors"

// ErrNotRunning is returned by a signal to a process that is not running:
// never started, or exited (killed, crashed).
var ErrNotRunning = errors.New("process is not running")
