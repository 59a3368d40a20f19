package nova

import "errors"

// ErrBaremetalNodeNotFound is what a BaremetalNodes source returns (wrapped)
// for a node Ironic does not have.
var ErrBaremetalNodeNotFound = errors.New("bare-metal node not found")
