package keystone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// realKeystone describes the Keystone of scripts/openstack-up.sh (load its openstack.env), or any
// Keystone given by the usual OS_* variables. The validator authenticates as the service user
// (CORRAL_SERVICE_* in service project, else the OS_* user); the validated token is ALICE_*'s if set,
// else the OS_* user's.
type realKeystone struct {
	authURL string
	service Options
	subject [3]string // user, password, project
	reader  [3]string // a user without a role that may validate tokens; empty when unknown
}

func realKeystoneFromEnv(t *testing.T) realKeystone {
	t.Helper()
	authURL := os.Getenv("OS_AUTH_URL")
	if authURL == "" {
		t.Skip("OS_AUTH_URL is not set: no real Keystone (scripts/openstack-up.sh writes an openstack.env to load)")
	}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	osUser := [3]string{os.Getenv("OS_USERNAME"), os.Getenv("OS_PASSWORD"), os.Getenv("OS_PROJECT_NAME")}
	if osUser[0] == "" || osUser[1] == "" || osUser[2] == "" {
		t.Fatal("OS_AUTH_URL is set but OS_USERNAME, OS_PASSWORD or OS_PROJECT_NAME is not")
	}
	rk := realKeystone{authURL: authURL, subject: osUser}
	rk.service = Options{
		AuthURL:           authURL,
		Username:          osUser[0],
		Password:          osUser[1],
		ProjectName:       osUser[2],
		UserDomainName:    env("OS_USER_DOMAIN_NAME", "Default"),
		ProjectDomainName: env("OS_PROJECT_DOMAIN_NAME", "Default"),
	}
	if u := os.Getenv("CORRAL_SERVICE_USERNAME"); u != "" {
		rk.service.Username, rk.service.Password = u, os.Getenv("CORRAL_SERVICE_PASSWORD")
		rk.service.ProjectName = env("SERVICE_PROJECT", "service")
	}
	if u := os.Getenv("ALICE_USERNAME"); u != "" {
		rk.subject = [3]string{u, os.Getenv("ALICE_PASSWORD"), os.Getenv("ALICE_PROJECT")}
	}
	if u := os.Getenv("CAROL_USERNAME"); u != "" {
		rk.reader = [3]string{u, os.Getenv("CAROL_PASSWORD"), os.Getenv("CAROL_PROJECT")}
	}
	return rk
}

// issueToken authenticates a user with a password, as a client of corral would.
func (rk realKeystone) issueToken(t *testing.T, user [3]string) string {
	t.Helper()
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": user[0], "password": user[1], "domain": map[string]string{"name": "Default"}}}},
		"scope": map[string]any{"project": map[string]any{"name": user[2], "domain": map[string]string{"name": "Default"}}},
	}}
	b, _ := json.Marshal(body)
	resp, err := http.Post(rk.service.identityV3()+"/auth/tokens?nocatalog", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("authenticate %s: %v", user[0], err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("authenticate %s: %s", user[0], resp.Status)
	}
	return resp.Header.Get("X-Subject-Token")
}

// revokeToken revokes a token with itself, as `openstack token revoke` does.
func (rk realKeystone) revokeToken(t *testing.T, tok string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, rk.service.identityV3()+"/auth/tokens", nil)
	req.Header.Set("X-Auth-Token", tok)
	req.Header.Set("X-Subject-Token", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %s", resp.Status)
	}
}

func TestRealKeystone(t *testing.T) {
	rk := realKeystoneFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	uncached := rk.service
	uncached.TokenCacheTime = -1
	quiet := WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	v, err := New(uncached, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tok := rk.issueToken(t, rk.subject)
	id, err := v.Validate(ctx, tok)
	if err != nil {
		t.Fatalf("validate %s's token: %v", rk.subject[0], err)
	}
	if id.UserName != rk.subject[0] || id.ProjectName != rk.subject[2] || id.UserID == "" || id.ProjectID == "" ||
		id.UserDomainName != "Default" || len(id.Roles) == 0 || !id.ExpiresAt.After(time.Now()) {
		t.Fatalf("identity %+v for %v", id, rk.subject[:1])
	}
	t.Logf("%s in %s: roles %v, expires %s", id.UserName, id.ProjectName, id.Roles, id.ExpiresAt)

	_, err = v.Validate(ctx, "gAAAAABnot-a-token-of-this-keystone")
	wantErr(t, err, ErrInvalidToken)

	// A token revoked in Keystone: refused at once without a cache, and by a caching validator only
	// once its cache time has passed.
	cached := rk.service
	cached.TokenCacheTime = 2 * time.Second
	cv, err := New(cached, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tok2 := rk.issueToken(t, rk.subject)
	if _, err := cv.Validate(ctx, tok2); err != nil {
		t.Fatalf("caching validator: %v", err)
	}
	rk.revokeToken(t, tok2)
	_, err = v.Validate(ctx, tok2)
	wantErr(t, err, ErrInvalidToken)
	if _, err := cv.Validate(ctx, tok2); err != nil {
		t.Fatalf("caching validator within its cache time: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cv.Validate(ctx, tok2)
		if errors.Is(err, ErrInvalidToken) {
			break
		}
		if err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("caching validator after revocation: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked token was still accepted 30 s after the cache time")
		}
		time.Sleep(100 * time.Millisecond) // polling Keystone with a deadline, not waiting for a duration
	}

	// Concurrent first uses of one token: one request to Keystone (shared, then cached).
	reg := prometheus.NewRegistry()
	mv, err := New(rk.service, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	tok3 := rk.issueToken(t, rk.subject)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := mv.Validate(ctx, tok3)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent validation: %v", err)
		}
	}
	if n := counter(t, reg, "corral_keystone_requests_total", "call", "validate"); n != 1 {
		t.Fatalf("%v validation requests for 20 concurrent uses of one token, want 1", n)
	}

	wrong := rk.service
	wrong.Password += "-wrong"
	wv, err := New(wrong, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wv.Validate(ctx, tok)
	wantErr(t, err, ErrUnavailable)
	if !errors.Is(err, ErrServiceCredentials) {
		t.Fatalf("wrong service password: %v, want ErrServiceCredentials", err)
	}

	if rk.reader[0] != "" {
		ro := rk.service
		ro.Username, ro.Password, ro.ProjectName = rk.reader[0], rk.reader[1], rk.reader[2]
		rv, err := New(ro, nil, quiet)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rv.Validate(ctx, tok)
		wantErr(t, err, ErrUnavailable)
		if !strings.Contains(err.Error(), "403") {
			t.Fatalf("a service user without the role: %v, want Keystone's 403", err)
		}
	}

	// Keystone unreachable: a loopback port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := rk.service
	down.AuthURL = "http://" + l.Addr().String() + "/v3"
	l.Close()
	dv, err := New(down, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dv.Validate(ctx, tok)
	wantErr(t, err, ErrUnavailable)
}
