package keystone

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ServiceToken is a service user's own project-scoped token (password authentication), got on
// first use and renewed before it expires or when a service refuses it: the Validator asks
// Keystone with one, and corral presents one to another service (Glance) for callers that have
// no Keystone token of their own. It is safe for concurrent use.
type ServiceToken struct {
	k   *conn
	now func() time.Time

	slot    chan struct{} // one authentication at a time
	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// NewServiceToken checks the options (auth_url and the service user's username, password,
// project_name and domains; the token cache and www_authenticate_uri do not apply) and builds a
// ServiceToken. hc nil means a direct client with opts' connect timeout; requests are counted on
// reg when it is not nil (call "authenticate"). It does not contact Keystone.
func NewServiceToken(opts Options, reg prometheus.Registerer, hc *http.Client) (*ServiceToken, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = defaultHTTPClient(opts)
	}
	return newServiceToken(&conn{opts: opts, base: opts.identityV3(), hc: hc, m: m}, time.Now), nil
}

func newServiceToken(k *conn, now func() time.Time) *ServiceToken {
	return &ServiceToken{k: k, now: now, slot: make(chan struct{}, 1)}
}

// Token returns a token that is not due for renewal, logging in when needed. Errors wrap
// ErrServiceCredentials (Keystone refused the user) or ErrUnavailable.
func (s *ServiceToken) Token(ctx context.Context) (string, error) {
	if tok, ok := s.current(); ok {
		return tok, nil
	}
	select {
	case s.slot <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: waiting for a service token: %w", ErrUnavailable, ctx.Err())
	}
	defer func() { <-s.slot }()
	if tok, ok := s.current(); ok { // another caller got one meanwhile
		return tok, nil
	}
	tok, renewAt, err := s.k.authenticate(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.token, s.renewAt = tok, renewAt
	s.mu.Unlock()
	return tok, nil
}

func (s *ServiceToken) current() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.token != "" && s.now().Before(s.renewAt)
}

// Refused forgets the token if it is still the current one (a service answered 401 to it): the
// next Token logs in again.
func (s *ServiceToken) Refused(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token, s.renewAt = "", time.Time{}
	}
}
