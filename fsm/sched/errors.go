package sched

import "errors"

// ErrMalformedSpec is wrapped by Parse's error when a flavor's extra specs
// cannot be understood; the message names every bad spec.
var ErrMalformedSpec = errors.New("malformed flavor extra specs")
