package keystone

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestServiceToken: the token is got once and reused, renewed before it expires and after a
// service refused it; a refusal of an older token does not drop the current one.
func TestServiceToken(t *testing.T) {
	clk := newClock()
	k := newFakeKeystone(t, clk)
	opts := k.options().withDefaults()
	s := newServiceToken(&conn{opts: opts, base: opts.identityV3(), hc: defaultHTTPClient(opts)}, clk.Now)
	ctx := context.Background()
	token := func() string {
		t.Helper()
		tok, err := s.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := token()
	if again := token(); again != first || k.authCalls.Load() != 1 {
		t.Fatalf("second Token: %q after %d logins, want %q after one", again, k.authCalls.Load(), first)
	}
	if _, ok := k.valid(first); !ok {
		t.Fatal("the service token is not one the fake Keystone issued")
	}
	s.Refused(first)
	second := token()
	if second == first || k.authCalls.Load() != 2 {
		t.Fatalf("after a refusal: %q after %d logins, want a new token", second, k.authCalls.Load())
	}
	s.Refused(first) // a late refusal of the old token
	if token() != second {
		t.Fatal("a refusal of the old token dropped the new one")
	}
	clk.Advance(59 * time.Minute) // within the renewal margin of a 1-hour token
	if third := token(); third == second || k.authCalls.Load() != 3 {
		t.Fatalf("near its expiry the token was not renewed (%d logins)", k.authCalls.Load())
	}
}

func TestServiceTokenErrors(t *testing.T) {
	k := newFakeKeystone(t, newClock())
	bad := k.options()
	bad.Password = "wrong"
	s, err := NewServiceToken(bad, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Token(context.Background()); !errors.Is(err, ErrServiceCredentials) {
		t.Fatalf("wrong password: %v, want ErrServiceCredentials", err)
	}
	bad.Password = ""
	if _, err := NewServiceToken(bad, nil, nil); err == nil {
		t.Fatal("NewServiceToken took options without a password")
	}
}
