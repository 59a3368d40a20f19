package keystone

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/testkit"
	"github.com/prometheus/client_golang/prometheus"
)

func newValidator(t *testing.T, k *fakeKeystone, reg prometheus.Registerer, edit func(*Options)) *Validator {
	t.Helper()
	o := k.options()
	if edit != nil {
		edit(&o)
	}
	v, err := New(o, reg, WithClock(k.clock.Now), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

func mustValidate(t *testing.T, v *Validator, tok string) Identity {
	t.Helper()
	id, err := v.Validate(context.Background(), tok)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return id
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want one wrapping %v", err, want)
	}
	other := ErrInvalidToken
	if want == ErrInvalidToken {
		other = ErrUnavailable
	}
	if errors.Is(err, other) {
		t.Fatalf("error %v wraps both %v and %v", err, want, other)
	}
}

func TestValidateReturnsIdentityAndCaches(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, nil)
	tok := k.issue("alice", time.Hour)

	id := mustValidate(t, v, tok)
	if id.UserName != "alice" || id.UserID != "id-alice" || id.ProjectName != "demo-a" || id.ProjectID != "id-demo-a" ||
		id.UserDomainName != "Default" || id.ProjectDomainID != "default" {
		t.Fatalf("identity %+v", id)
	}
	if !id.HasRole("member") || !id.HasRole("READER") || id.HasRole("admin") {
		t.Fatalf("roles %v", id.Roles)
	}
	if want := k.clock.Now().Add(time.Hour); !id.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", id.ExpiresAt, want)
	}
	id.Roles[0] = "admin" // a caller's change must not reach the cache
	again := mustValidate(t, v, tok)
	if again.HasRole("admin") {
		t.Fatalf("the cached identity was changed through a returned one: %v", again.Roles)
	}
	if n := k.validateCalls.Load(); n != 1 {
		t.Fatalf("%d validation requests for two validations within the cache time, want 1", n)
	}
	if n := k.authCalls.Load(); n != 1 {
		t.Fatalf("%d service authentications, want 1", n)
	}
}

func TestConcurrentFirstUsesShareOneRequest(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, nil)
	tok := k.issue("alice", time.Hour)
	mustValidate(t, v, k.issue("alice", time.Hour)) // the service token is fetched before requests are held
	release := k.hold()

	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			id, err := v.Validate(context.Background(), tok)
			if err == nil && id.UserName != "alice" {
				err = errors.New("wrong user " + id.UserName)
			}
			errs <- err
		})
	}
	waitFor(t, "all callers to share one flight", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		f := v.flights[keyOf(tok)]
		return f != nil && f.waiters == n
	})
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := k.validateCalls.Load(); got != 2 { // one for the warm-up token, one for the n callers
		t.Fatalf("%d validation requests, want 2", got)
	}
}

func TestCallerGivingUpDoesNotFailOthers(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, nil)
	tok := k.issue("alice", time.Hour)
	release := k.hold()

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := v.Validate(ctx, tok); first <- err }()
	waitFor(t, "the first caller's flight", func() bool { return k.validateCalls.Load() == 1 })
	second := make(chan error, 1)
	go func() { _, err := v.Validate(context.Background(), tok); second <- err }()
	waitFor(t, "the second caller to join", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		f := v.flights[keyOf(tok)]
		return f != nil && f.waiters == 2
	})
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", err)
	}
	release()
	if err := <-second; err != nil {
		t.Fatalf("second caller: %v", err)
	}
}

func TestCacheExpiresAfterTokenCacheTime(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.TokenCacheTime = time.Minute })
	tok := k.issue("alice", time.Hour)
	mustValidate(t, v, tok)
	k.clock.Advance(59 * time.Second)
	mustValidate(t, v, tok)
	if n := k.validateCalls.Load(); n != 1 {
		t.Fatalf("%d requests within the cache time, want 1", n)
	}
	k.clock.Advance(2 * time.Second)
	mustValidate(t, v, tok)
	if n := k.validateCalls.Load(); n != 2 {
		t.Fatalf("%d requests after the cache time, want 2", n)
	}
}

func TestCacheNeverOutlivesTheToken(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.TokenCacheTime = time.Hour })
	tok := k.issue("alice", 30*time.Second)
	mustValidate(t, v, tok)
	k.clock.Advance(30 * time.Second)
	_, err := v.Validate(context.Background(), tok)
	wantErr(t, err, ErrInvalidToken)
	if n := k.validateCalls.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (the cache must not serve an expired token)", n)
	}
}

func TestRevocationTakesEffectAfterCacheTime(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.TokenCacheTime = 2 * time.Minute })
	tok := k.issue("alice", time.Hour)
	mustValidate(t, v, tok)
	k.revoke(tok)
	k.clock.Advance(time.Minute)
	mustValidate(t, v, tok) // within token_cache_time the revocation is not seen yet
	k.clock.Advance(time.Minute)
	_, err := v.Validate(context.Background(), tok)
	wantErr(t, err, ErrInvalidToken)
	if !strings.Contains(err.Error(), "Could not recognize") {
		t.Fatalf("error %q does not carry Keystone's message", err)
	}
}

func TestNegativeCacheTimeAsksEveryTime(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.TokenCacheTime = -1 })
	tok := k.issue("alice", time.Hour)
	mustValidate(t, v, tok)
	mustValidate(t, v, tok)
	k.revoke(tok)
	_, err := v.Validate(context.Background(), tok)
	wantErr(t, err, ErrInvalidToken)
	if n := k.validateCalls.Load(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestKeystoneDownServesCachedAndRefusesNew(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	reg := prometheus.NewRegistry()
	v := newValidator(t, k, reg, func(o *Options) { o.TokenCacheTime = time.Minute })
	known := k.issue("alice", time.Hour)
	fresh := k.issue("alice", time.Hour)
	mustValidate(t, v, known)

	k.setFail(http.StatusServiceUnavailable)
	mustValidate(t, v, known)
	_, err := v.Validate(context.Background(), fresh)
	wantErr(t, err, ErrUnavailable)

	k.srv.Close() // unreachable: connection refused
	mustValidate(t, v, known)
	_, err = v.Validate(context.Background(), fresh)
	wantErr(t, err, ErrUnavailable)

	k.clock.Advance(time.Minute)
	_, err = v.Validate(context.Background(), known)
	wantErr(t, err, ErrUnavailable)

	if got := counter(t, reg, "corral_keystone_token_validations_total", "outcome", "valid"); got != 3 {
		t.Fatalf("valid validations %v, want 3", got)
	}
	if got := counter(t, reg, "corral_keystone_token_validations_total", "outcome", "unavailable"); got != 3 {
		t.Fatalf("unavailable validations %v, want 3", got)
	}
	if got := counter(t, reg, "corral_keystone_token_cache_hits_total", "", ""); got != 2 {
		t.Fatalf("cache hits %v, want 2", got)
	}
	if got := counter(t, reg, "corral_keystone_requests_total", "code", "503"); got != 1 {
		t.Fatalf("503 answers counted %v, want 1", got)
	}
	if got := counter(t, reg, "corral_keystone_requests_total", "code", "network"); got < 1 {
		t.Fatalf("network failures counted %v, want at least 1", got)
	}
}

func TestMalformedTokensAreRefusedWithoutAskingKeystone(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	reg := prometheus.NewRegistry()
	v := newValidator(t, k, reg, nil)
	for name, tok := range map[string]string{
		"empty":     "",
		"space":     "gAAAA abc",
		"newline":   "gAAAA\r\nX-Evil: 1",
		"non-ascii": "gAAAAé",
		"control":   "gAAAA\x00",
		"too long":  strings.Repeat("a", maxTokenLen+1),
	} {
		_, err := v.Validate(context.Background(), tok)
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: error %v, want ErrInvalidToken", name, err)
		}
	}
	if n := k.validateCalls.Load() + k.authCalls.Load(); n != 0 {
		t.Fatalf("%d requests to Keystone for malformed tokens, want 0", n)
	}
	if got := counter(t, reg, "corral_keystone_token_validations_total", "outcome", "malformed"); got != 6 {
		t.Fatalf("malformed validations %v, want 6", got)
	}
}

func TestTokenFromHeader(t *testing.T) {
	for name, c := range map[string]struct {
		vals []string
		want string
		ok   bool
	}{
		"one":       {[]string{"gAAAAabc"}, "gAAAAabc", true},
		"padded":    {[]string{" gAAAAabc "}, "gAAAAabc", true},
		"missing":   {nil, "", false},
		"empty":     {[]string{""}, "", false},
		"two":       {[]string{"a", "b"}, "", false},
		"malformed": {[]string{"a b"}, "", false},
	} {
		h := http.Header{}
		for _, v := range c.vals {
			h.Add("X-Auth-Token", v)
		}
		got, err := TokenFromHeader(h)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, c.want)
		}
		if !c.ok && !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: error %v, want ErrInvalidToken", name, err)
		}
	}
}

func TestTokenOfAnotherKeystoneIsInvalid(t *testing.T) {
	c := newClock()
	ours, theirs := newFakeKeystone(t, c), newFakeKeystone(t, c)
	v := newValidator(t, ours, nil, nil)
	_, err := v.Validate(context.Background(), theirs.issue("alice", time.Hour))
	wantErr(t, err, ErrInvalidToken)
	mustValidate(t, v, ours.issue("alice", time.Hour))
}

func TestServiceTokenIsRenewedBeforeExpiry(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	k.tokenTTL = 10 * time.Minute // renewed 2 minutes early
	v := newValidator(t, k, nil, nil)
	mustValidate(t, v, k.issue("alice", time.Hour))
	k.clock.Advance(7 * time.Minute)
	mustValidate(t, v, k.issue("alice", time.Hour))
	if n := k.authCalls.Load(); n != 1 {
		t.Fatalf("%d authentications before the renewal time, want 1", n)
	}
	k.clock.Advance(90 * time.Second)
	mustValidate(t, v, k.issue("alice", time.Hour))
	if n := k.authCalls.Load(); n != 2 {
		t.Fatalf("%d authentications after the renewal time, want 2", n)
	}
}

func TestRefusedServiceTokenIsReplaced(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, nil)
	mustValidate(t, v, k.issue("alice", time.Hour))
	k.revokeUser("corral") // e.g. the service user's password was changed and back, or keys rotated
	id := mustValidate(t, v, k.issue("alice", time.Hour))
	if id.UserName != "alice" {
		t.Fatalf("identity %+v", id)
	}
	if n := k.authCalls.Load(); n != 2 {
		t.Fatalf("%d authentications, want 2", n)
	}
}

func TestWrongServiceCredentialsAreUnavailableNotInvalid(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.Password = "wrong" })
	_, err := v.Validate(context.Background(), k.issue("alice", time.Hour))
	wantErr(t, err, ErrUnavailable)
	if !errors.Is(err, ErrServiceCredentials) {
		t.Fatalf("error %v, want ErrServiceCredentials", err)
	}
	if !strings.Contains(err.Error(), `"corral"`) {
		t.Fatalf("error %q does not name the service user", err)
	}
}

func TestServiceUserWithoutRoleIsUnavailable(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.Username, o.Password = "nobody", "nobody-pw" })
	_, err := v.Validate(context.Background(), k.issue("alice", time.Hour))
	wantErr(t, err, ErrUnavailable)
	if !strings.Contains(err.Error(), "service or admin role") {
		t.Fatalf("error %q does not tell what to do", err)
	}
}

func TestUnversionedAuthURLGetsV3(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	v := newValidator(t, k, nil, func(o *Options) { o.AuthURL = k.srv.URL + "/" })
	mustValidate(t, v, k.issue("alice", time.Hour))
	if got, want := v.WWWAuthenticate(), `Keystone uri="`+k.srv.URL+`/"`; got != want {
		t.Fatalf("WWWAuthenticate %q, want %q", got, want)
	}
}

func keyOf(tok string) [32]byte { return tokenKey(tok) }

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, testkit.Holds(what, cond), testkit.Every(time.Millisecond))
}

// counter reads one counter series from a registry; label "" reads an unlabelled counter.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					match = true
				}
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
