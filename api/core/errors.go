package core

import (
	"errors"
	"fmt"
)

// Errors detected by the API layer itself.
var (
	ErrBadRequest   = errors.New("bad request")
	ErrUnauthorized = errors.New("authentication required: send a token in X-Auth-Token or Authorization: Bearer (set CORRAL_TOKEN for the CLI)")
	ErrForbidden    = errors.New("forbidden")
	// ErrAuthUnavailable: the token could not be validated because Keystone
	// did not answer; the client may retry (503, not 401: its credentials
	// may be fine).
	ErrAuthUnavailable = errors.New("the identity service (Keystone) cannot validate the token now; retry later")
)

// BadRequest is an ErrBadRequest with what is wrong.
func BadRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
