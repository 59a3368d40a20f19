package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/glance"
)

// tokenLog records the X-Auth-Token of every request a fake service receives.
type tokenLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *tokenLog) add(tok string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, tok)
}

// take returns what was recorded since the last take.
func (l *tokenLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.seen
	l.seen = nil
	return out
}

// recordingGlance serves activeImage to every request and records its token.
func recordingGlance(t *testing.T, log *tokenLog) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.Header.Get("X-Auth-Token"))
		if strings.TrimPrefix(r.URL.Path, "/v2/images/") != activeImage {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"id": %q, "name": "ubuntu", "status": "active"}`, activeImage)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestImageLookupCredentials: a boot with one of corral's static tokens
// never sends that token to Glance: the image is read as corral's service
// user; a boot with a Keystone token sends the caller's own token, so that
// Glance judges the caller's rights.
func TestImageLookupCredentials(t *testing.T) {
	var seen tokenLog
	gc, err := glance.New(recordingGlance(t, &seen).URL, nil, glance.WithServiceToken(staticSource(glanceServiceToken)))
	if err != nil {
		t.Fatal(err)
	}
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Images = gc })
	e.issueDemoTokens()
	createFlavor(t, e.env, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	boot := func(token string) response {
		return do(t, e.ts, http.MethodPost, computeBase+"/servers", token,
			`{"server": {"name": "a", "imageRef": "`+activeImage+`", "flavorRef": "f", "networks": "none"}}`, nil)
	}

	r := boot(adminToken)
	if got := seen.take(); slices.Contains(got, adminToken) {
		t.Fatalf("a boot with a static token sent it to Glance (tokens Glance saw: %q; answer %s)", got, r)
	} else if !slices.Equal(got, []string{glanceServiceToken}) || r.code != http.StatusAccepted {
		t.Fatalf("a boot with a static token: %s, Glance saw %q, want corral's service token", r, got)
	}
	static := get(t, r.json(t), "server", "id").(string)
	r = boot(aliceToken)
	if r.code != http.StatusAccepted {
		t.Fatalf("boot with a Keystone token: %s", r)
	}
	if got := seen.take(); !slices.Equal(got, []string{aliceToken}) {
		t.Fatalf("Glance saw %q for a Keystone caller's boot, want the caller's token", got)
	}
	mine := get(t, r.json(t), "server", "id").(string)

	// A rebuild's image is checked the same way (whatever the server's state then allows).
	for _, c := range []struct{ token, server, want string }{
		{adminToken, static, glanceServiceToken},
		{aliceToken, mine, aliceToken},
	} {
		do(t, e.ts, http.MethodPost, computeBase+"/servers/"+c.server+"/action", c.token,
			`{"rebuild": {"imageRef": "`+activeImage+`"}}`, nil)
		if got := seen.take(); !slices.Equal(got, []string{c.want}) {
			t.Errorf("rebuild with token %q: Glance saw %q, want %q", c.token, got, c.want)
		}
	}
}

// TestImageLookupWithoutServiceUser: without a Glance service user, a
// static-token caller's lookup carries no token, and Glance's refusal
// tells the operator how to fix it.
func TestImageLookupWithoutServiceUser(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, sent := r.Header["X-Auth-Token"]; sent {
			t.Errorf("Glance got a token: %q", r.Header.Get("X-Auth-Token"))
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(ts.Close)
	gc, err := glance.New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.Images = gc })
	createFlavor(t, e.env, `{"flavor": {"name": "f", "id": "f", "ram": 1, "vcpus": 1, "disk": 1}}`)
	r := do(t, e.ts, http.MethodPost, computeBase+"/servers", adminToken,
		`{"server": {"name": "a", "imageRef": "`+activeImage+`", "flavorRef": "f", "networks": "none"}}`, nil)
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "[glance] auth_type = password") {
		t.Fatalf("boot with a static token, Glance refusing: %s, want 400 naming [glance] auth_type", r)
	}
}

// recordingBaremetal is a proxy source that records the token it is given.
type recordingBaremetal struct{ log *tokenLog }

func (b recordingBaremetal) BaremetalNodes(_ context.Context, token string) ([]nova.BaremetalNode, error) {
	b.log.add(token)
	return []nova.BaremetalNode{{UUID: "n1"}}, nil
}

func (b recordingBaremetal) BaremetalNode(_ context.Context, id, token string) (nova.BaremetalNode, error) {
	b.log.add(token)
	return nova.BaremetalNode{UUID: id}, nil
}

// TestBaremetalProxyCredentials: the os-baremetal-nodes proxy hands its
// source the caller's token only when Keystone issued it; a caller with a
// static token gets none (the source then asks as corral itself).
func TestBaremetalProxyCredentials(t *testing.T) {
	var seen tokenLog
	e := newKeystoneEnv(t, time.Minute, func(c *api.Config) { c.BaremetalNodes = recordingBaremetal{&seen} })
	e.issueDemoTokens()
	for _, path := range []string{"/os-baremetal-nodes", "/os-baremetal-nodes/n1"} {
		for _, c := range []struct {
			token string
			want  string
		}{
			{adminToken, ""},
			{ksAdmin, ksAdmin},
		} {
			if r := do(t, e.ts, http.MethodGet, computeBase+path, c.token, "", nil); r.code != http.StatusOK {
				t.Fatalf("GET %s: %s", path, r)
			}
			if got := seen.take(); !slices.Equal(got, []string{c.want}) {
				t.Errorf("GET %s with token %q: the source got %q, want %q", path, c.token, got, c.want)
			}
		}
	}
}
