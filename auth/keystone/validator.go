package keystone

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// maxTokenLen bounds what is sent to Keystone; Fernet tokens are about 200 bytes.
	maxTokenLen = 8 << 10
	// maxCacheEntries bounds the cache; past it, expired entries are dropped, then arbitrary ones.
	maxCacheEntries = 10000
)

// Identity is who a valid token speaks for.
type Identity struct {
	UserID, UserName             string
	UserDomainID, UserDomainName string
	// ProjectID... are set for a project-scoped token.
	ProjectID, ProjectName             string
	ProjectDomainID, ProjectDomainName string
	// DomainID, DomainName are set for a domain-scoped token.
	DomainID, DomainName string
	// System is true for a system-scoped token (scope "all").
	System bool
	// Roles are the role names the token carries in its scope.
	Roles     []string
	IssuedAt  time.Time
	ExpiresAt time.Time
	AuditIDs  []string
}

// HasRole reports whether the token carries the role (case-insensitive, as Keystone's role names).
func (id Identity) HasRole(name string) bool {
	return slices.ContainsFunc(id.Roles, func(r string) bool { return strings.EqualFold(r, name) })
}

func (id Identity) clone() Identity {
	id.Roles = slices.Clone(id.Roles)
	id.AuditIDs = slices.Clone(id.AuditIDs)
	return id
}

// Validator validates tokens against one Keystone. It is safe for concurrent use.
type Validator struct {
	*conn
	now func() time.Time
	log *slog.Logger
	svc *ServiceToken

	mu      sync.Mutex
	cache   map[[32]byte]entry
	flights map[[32]byte]*flight
}

type entry struct {
	id    Identity
	until time.Time
}

// flight is one Keystone validation that concurrent callers with the same token share.
type flight struct {
	done    chan struct{}
	id      Identity
	err     error
	waiters int // callers sharing it (read under Validator.mu)
}

// Option changes how a Validator is built.
type Option func(*Validator)

// WithHTTPClient sets the HTTP client used to reach Keystone (e.g. for TLS settings).
func WithHTTPClient(c *http.Client) Option { return func(v *Validator) { v.hc = c } }

// WithClock sets the clock that cache and token expiries are judged by.
func WithClock(now func() time.Time) Option { return func(v *Validator) { v.now = now } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(v *Validator) { v.log = l } }

// New checks the options and builds a Validator. Metrics are registered on reg when it is not nil.
// It does not contact Keystone: the service token is fetched on first use.
func New(opts Options, reg prometheus.Registerer, options ...Option) (*Validator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	v := &Validator{
		conn:    &conn{opts: opts, base: opts.identityV3(), m: m},
		now:     time.Now,
		log:     slog.Default(),
		cache:   make(map[[32]byte]entry),
		flights: make(map[[32]byte]*flight),
	}
	for _, o := range options {
		o(v)
	}
	if v.hc == nil {
		v.hc = defaultHTTPClient(opts)
	}
	v.svc = newServiceToken(v.conn, v.now)
	return v, nil
}

// WWWAuthenticate is the value of the WWW-Authenticate header of a 401: `Keystone uri="..."`.
func (v *Validator) WWWAuthenticate() string {
	return `Keystone uri="` + v.opts.WWWAuthenticateURI + `"`
}

// TokenFromHeader returns the caller's token from X-Auth-Token, or an error wrapping ErrInvalidToken
// when the header is missing, repeated or malformed.
func TokenFromHeader(h http.Header) (string, error) {
	vals := h.Values("X-Auth-Token")
	switch len(vals) {
	case 0:
		return "", fmt.Errorf("%w: no X-Auth-Token header", ErrInvalidToken)
	case 1:
	default:
		return "", fmt.Errorf("%w: %d X-Auth-Token headers, want one", ErrInvalidToken, len(vals))
	}
	tok := strings.TrimSpace(vals[0])
	if err := checkTokenForm(tok); err != nil {
		return "", err
	}
	return tok, nil
}

// checkTokenForm refuses what no Keystone issues, without asking one.
func checkTokenForm(tok string) error {
	if tok == "" {
		return fmt.Errorf("%w: the token is empty", ErrInvalidToken)
	}
	if len(tok) > maxTokenLen {
		return fmt.Errorf("%w: the token is %d bytes long, more than %d", ErrInvalidToken, len(tok), maxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: the token holds a character that is not printable ASCII at byte %d",
				ErrInvalidToken, i)
		}
	}
	return nil
}

// Validate returns the identity a token speaks for. Errors wrap ErrInvalidToken (answer 401) or
// ErrUnavailable (answer 503), or are ctx's error when ctx ends first. A valid answer is reused for
// token_cache_time (never past the token's expiry), also while Keystone is down; concurrent calls
// with the same token share one Keystone request.
func (v *Validator) Validate(ctx context.Context, token string) (Identity, error) {
	if err := checkTokenForm(token); err != nil {
		v.m.validation(outcomeMalformed)
		return Identity{}, err
	}
	key := tokenKey(token)
	now := v.now()

	v.mu.Lock()
	if e, ok := v.cache[key]; ok {
		if now.Before(e.until) {
			v.mu.Unlock()
			v.m.cacheHit()
			v.m.validation(outcomeValid)
			return e.id.clone(), nil
		}
		delete(v.cache, key)
	}
	f, ok := v.flights[key]
	if !ok {
		f = &flight{done: make(chan struct{})}
		v.flights[key] = f
		// The request outlives a caller that gives up: the others sharing it still want the answer.
		go v.run(context.WithoutCancel(ctx), key, token, f)
	}
	f.waiters++
	v.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		return Identity{}, ctx.Err()
	}
	v.m.validation(outcomeOf(f.err))
	if f.err != nil {
		return Identity{}, f.err
	}
	return f.id.clone(), nil
}

// tokenKey is the cache key of a token: its hash, so that the cache holds no usable token.
func tokenKey(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// run performs one flight's Keystone request and publishes its answer.
func (v *Validator) run(ctx context.Context, key [32]byte, token string, f *flight) {
	id, err := v.validateRemote(ctx, token)
	now := v.now()
	if err == nil && !now.Before(id.ExpiresAt) {
		err = fmt.Errorf("%w: the token expired at %s", ErrInvalidToken, id.ExpiresAt.UTC().Format(time.RFC3339))
	}
	f.id, f.err = id, err
	if err != nil && !errors.Is(err, ErrInvalidToken) {
		v.log.Warn("keystone: token validation failed", "auth_url", v.opts.AuthURL, "err", err)
	}

	v.mu.Lock()
	delete(v.flights, key)
	if err == nil && v.opts.TokenCacheTime > 0 {
		until := now.Add(v.opts.TokenCacheTime)
		if id.ExpiresAt.Before(until) {
			until = id.ExpiresAt
		}
		v.store(key, entry{id: id, until: until}, now)
	}
	v.mu.Unlock()
	close(f.done)
}

// store adds a cache entry, keeping the cache within maxCacheEntries. Called with mu held.
func (v *Validator) store(key [32]byte, e entry, now time.Time) {
	if len(v.cache) >= maxCacheEntries {
		for k, old := range v.cache {
			if !now.Before(old.until) {
				delete(v.cache, k)
			}
		}
		for k := range v.cache {
			if len(v.cache) < maxCacheEntries {
				break
			}
			delete(v.cache, k)
		}
	}
	v.cache[key] = e
}

// validateRemote asks Keystone, renewing the service token once if Keystone refuses it.
func (v *Validator) validateRemote(ctx context.Context, token string) (Identity, error) {
	for attempt := 0; ; attempt++ {
		svc, err := v.svc.Token(ctx)
		if err != nil {
			return Identity{}, err
		}
		id, err := v.check(ctx, svc, token)
		if !errors.Is(err, errServiceRefused) {
			return id, err
		}
		v.svc.Refused(svc)
		if attempt > 0 {
			return Identity{}, fmt.Errorf("%w: Keystone refuses a service token it has just issued: %w",
				ErrUnavailable, err)
		}
		v.log.Info("keystone: the service token was refused; getting a new one", "auth_url", v.opts.AuthURL)
	}
}
