package keystone

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidToken: the token is missing, malformed, expired, revoked or not issued by this
	// Keystone. An API answers 401 with the WWW-Authenticate value; the client must get a new token.
	ErrInvalidToken = errors.New("keystone: the token is not valid (get a new one from Keystone)")
	// ErrUnavailable: Keystone could not be asked or did not answer usefully (unreachable, timeout,
	// 5xx, the service user refused). An API answers 503; the client may retry later.
	ErrUnavailable = errors.New("keystone: cannot validate the token now")
	// ErrServiceCredentials: Keystone refused the service user's own credentials (username, password,
	// project_name and the domains). It wraps ErrUnavailable; the operator must fix the options.
	ErrServiceCredentials = fmt.Errorf("%w: Keystone refused the service user's credentials "+
		"(check username, password, project_name, user_domain_name, project_domain_name)", ErrUnavailable)
)
