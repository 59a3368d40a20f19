package tlsutil

import "errors"

// ErrNotPeer marks a certificate that does not name a corral peer, or
// names another peer than the one expected.
var ErrNotPeer = errors.New("not the certificate of a corral peer")

// ErrBadFile marks a TLS file that cannot be used.
var ErrBadFile = errors.New("unusable TLS file")
