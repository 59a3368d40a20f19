package ironic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

// keystoneIronic is the service user's [ironic] auth of the control plane scripts/openstack-up.sh
// starts (its env file exported), or skips the test.
func keystoneIronic(t *testing.T) Auth {
	t.Helper()
	if os.Getenv("OS_AUTH_URL") == "" || os.Getenv("CORRAL_SERVICE_USERNAME") == "" {
		t.Skip("OS_AUTH_URL is not set: start Keystone and Ironic with scripts/openstack-up.sh and export its env file")
	}
	return Auth{Type: AuthPassword, AuthURL: os.Getenv("OS_AUTH_URL"), Username: os.Getenv("CORRAL_SERVICE_USERNAME"),
		Password: os.Getenv("CORRAL_SERVICE_PASSWORD"), ProjectName: os.Getenv("SERVICE_PROJECT"),
		UserDomainName: "Default", ProjectDomainName: "Default"}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestKeystoneAuthCatalog: with auth_type password the client finds Ironic in Keystone's catalog,
// and a token Keystone revoked under it costs one re-authentication, not a failed call.
func TestKeystoneAuthCatalog(t *testing.T) {
	a := keystoneIronic(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, Options{Auth: a, Logger: quiet()})
	if err != nil {
		t.Fatalf("New with Keystone: %v", err)
	}
	if want := strings.TrimSuffix(os.Getenv("OPENSTACK_IRONIC_URL"), "/"); want != "" && c.root != want {
		t.Errorf("Ironic from the catalog at %s, want %s", c.root, want)
	}
	if _, err := c.ListNodes(ctx); err != nil {
		t.Fatalf("list nodes: %v", err)
	}
}

// TestKeystoneAuthReauth: Ironic refusing the client's token (401: Keystone revoked it) costs one
// re-authentication and the call goes through. A proxy in front of the real Ironic answers 401 to
// the first token, as an Ironic whose token cache has expired would after a revocation.
func TestKeystoneAuthReauth(t *testing.T) {
	a := keystoneIronic(t)
	target, err := url.Parse(os.Getenv("OPENSTACK_IRONIC_URL"))
	if err != nil || target.Host == "" {
		t.Skip("OPENSTACK_IRONIC_URL is not set")
	}
	var mu sync.Mutex
	refused, refusals := "", 0
	proxy := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deny := refused != "" && r.Header.Get("X-Auth-Token") == refused
		if deny {
			refusals++
		}
		mu.Unlock()
		if deny {
			http.Error(w, `{"error_message": "{\"faultstring\": \"Authentication required\"}"}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := New(ctx, Options{URL: ts.URL, Auth: a, Logger: quiet()})
	if err != nil {
		t.Fatalf("New with Keystone and [ironic] url: %v", err)
	}
	old := c.sc.ProviderClient.Token()
	mu.Lock()
	refused = old
	mu.Unlock()
	if _, err := c.ListNodes(ctx); err != nil {
		t.Fatalf("list nodes when Ironic refuses the token once: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if refusals != 1 || c.sc.ProviderClient.Token() == old {
		t.Errorf("%d refusals, token renewed %v; want one refusal and a new token", refusals, c.sc.ProviderClient.Token() != old)
	}
}

// TestKeystoneAuthErrors: a wrong password, an unreachable Keystone and a catalog without a
// baremetal endpoint in the region are each an ErrAuthentication naming the option to fix.
func TestKeystoneAuthErrors(t *testing.T) {
	good := keystoneIronic(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v3"
	_ = ln.Close()
	wrongPW, deadKS, noRegion, missing := good, good, good, good
	wrongPW.Password = "not-the-password"
	deadKS.AuthURL = dead
	noRegion.RegionName = "NoSuchRegion"
	missing.ProjectName = ""
	for _, c := range []struct {
		name string
		auth Auth
		want string
	}{
		{"wrong password", wrongPW, "[ironic] username, password"},
		{"Keystone unreachable", deadKS, "[ironic] auth_url"},
		{"no baremetal endpoint", noRegion, "region_name"},
		{"no project", missing, "[ironic] project_name is required"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := New(ctx, Options{Auth: c.auth, Logger: quiet()})
		cancel()
		if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrAuthentication naming %q", c.name, err, c.want)
		}
	}
}

// TestWithToken: a client from WithToken presents the caller's token and never re-authenticates
// on a 401; the client it came from keeps its own credentials.
func TestWithToken(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := sim.New(sim.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("X-Auth-Token")
		mu.Lock()
		seen = append(seen, tok)
		mu.Unlock()
		if tok == "expired" {
			http.Error(w, `{"error_message": "{\"faultstring\": \"Authentication required\"}"}`, http.StatusUnauthorized)
			return
		}
		s.ServeHTTP(w, r)
	}))
	var logins atomic.Int64
	ks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logins.Add(1)
		w.Header().Set("X-Subject-Token", "svc-token")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": {"expires_at": %q, "methods": ["password"], "catalog": []}}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(func() { ts.Close(); ks.Close(); s.Close() })
	ctx := context.Background()
	c, err := New(ctx, Options{URL: ts.URL, Logger: quiet(), Auth: Auth{Type: AuthPassword, AuthURL: ks.URL + "/v3",
		Username: "corral", Password: "pw", ProjectName: "service"}})
	if err != nil {
		t.Fatal(err)
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
	take()
	if _, err := c.WithToken("user-token").ListNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := take(); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "user-token" }) {
		t.Fatalf("WithToken's client sent %q, want only the caller's token", got)
	}
	if _, err := c.ListNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := take(); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "svc-token" }) {
		t.Fatalf("the original client sent %q, want only its service token", got)
	}
	before := logins.Load()
	_, err = c.WithToken("expired").ListNodes(ctx)
	if StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("a refused caller's token: %v, want Ironic's 401", err)
	}
	if got := take(); len(got) != 1 || logins.Load() != before {
		t.Fatalf("a refused caller's token was sent %d times (%q) with %d new logins, want once and none",
			len(got), got, logins.Load()-before)
	}
}
