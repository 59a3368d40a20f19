package keystone

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock shared by a fake Keystone and the Validator under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fakeToken struct {
	user, project string
	roles         []string
	issued        time.Time
	expires       time.Time
	revoked       bool
}

// fakeKeystone speaks the part of Keystone's v3 token API a Validator uses, with its own users and
// tokens: a token it did not issue is unknown to it, as a Fernet token of another Keystone is.
type fakeKeystone struct {
	t     *testing.T
	clock *clock
	srv   *httptest.Server

	mu       sync.Mutex
	users    map[string]fakeUser // by name
	tokens   map[string]*fakeToken
	tokenTTL time.Duration
	failWith int           // when not 0, every request answers this status
	gate     chan struct{} // when not nil, validations wait for it to close

	authCalls     atomic.Int64
	validateCalls atomic.Int64
}

type fakeUser struct {
	password, project string
	roles             []string
}

func newFakeKeystone(t *testing.T, c *clock) *fakeKeystone {
	t.Helper()
	k := &fakeKeystone{
		t: t, clock: c, tokenTTL: time.Hour,
		users: map[string]fakeUser{
			"corral": {password: "corral-pw", project: "service", roles: []string{"service", "admin"}},
			"nobody": {password: "nobody-pw", project: "service", roles: []string{"member"}},
			"alice":  {password: "alice-pw", project: "demo-a", roles: []string{"member", "reader"}},
		},
		tokens: make(map[string]*fakeToken),
	}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

// issue creates a token for a user directly, as if the user had authenticated.
func (k *fakeKeystone) issue(user string, ttl time.Duration) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	u, ok := k.users[user]
	if !ok {
		k.t.Fatalf("fake keystone: no user %q", user)
	}
	return k.issueLocked(user, u, ttl)
}

func (k *fakeKeystone) issueLocked(name string, u fakeUser, ttl time.Duration) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "gAAAAA" + hex.EncodeToString(b)
	now := k.clock.Now()
	k.tokens[tok] = &fakeToken{user: name, project: u.project, roles: u.roles, issued: now, expires: now.Add(ttl)}
	return tok
}

func (k *fakeKeystone) revoke(tok string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tokens[tok].revoked = true
}

// revokeUser revokes every token of a user (as Keystone does when the user's password changes).
func (k *fakeKeystone) revokeUser(user string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, t := range k.tokens {
		if t.user == user {
			t.revoked = true
		}
	}
}

func (k *fakeKeystone) setFail(status int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failWith = status
}

// hold makes validation requests wait until release is called (at the latest when the test ends,
// before the server closes).
func (k *fakeKeystone) hold() (release func()) {
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	k.mu.Lock()
	k.gate = gate
	k.mu.Unlock()
	k.t.Cleanup(release)
	return release
}

// valid returns the token when it is known, not revoked and not expired.
func (k *fakeKeystone) valid(tok string) (*fakeToken, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.tokens[tok]
	if !ok || t.revoked || !k.clock.Now().Before(t.expires) {
		return nil, false
	}
	return t, true
}

func keystoneErr(w http.ResponseWriter, code int, title, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "title": title, "message": msg}})
}

func (k *fakeKeystone) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	fail, gate := k.failWith, k.gate
	k.mu.Unlock()
	if r.URL.Path != "/v3/auth/tokens" {
		keystoneErr(w, http.StatusNotFound, "Not Found", "no such path "+r.URL.Path)
		return
	}
	switch r.Method {
	case http.MethodPost:
		k.authCalls.Add(1)
		if fail != 0 {
			keystoneErr(w, fail, http.StatusText(fail), "injected failure")
			return
		}
		k.authenticate(w, r)
	case http.MethodGet:
		k.validateCalls.Add(1)
		if gate != nil {
			<-gate
		}
		if fail != 0 {
			keystoneErr(w, fail, http.StatusText(fail), "injected failure")
			return
		}
		k.validate(w, r)
	default:
		keystoneErr(w, http.StatusMethodNotAllowed, "Method Not Allowed", r.Method)
	}
}

func (k *fakeKeystone) authenticate(w http.ResponseWriter, r *http.Request) {
	var doc struct {
		Auth struct {
			Identity struct {
				Methods  []string `json:"methods"`
				Password struct {
					User struct {
						Name     string `json:"name"`
						Domain   ref    `json:"domain"`
						Password string `json:"password"`
					} `json:"user"`
				} `json:"password"`
			} `json:"identity"`
			Scope struct {
				Project struct {
					Name   string `json:"name"`
					Domain ref    `json:"domain"`
				} `json:"project"`
			} `json:"scope"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&doc); err != nil {
		keystoneErr(w, http.StatusBadRequest, "Bad Request", err.Error())
		return
	}
	pw := doc.Auth.Identity.Password
	k.mu.Lock()
	u, ok := k.users[pw.User.Name]
	if !ok || u.password != pw.User.Password || pw.User.Domain.Name != "Default" ||
		doc.Auth.Scope.Project.Name != u.project || doc.Auth.Scope.Project.Domain.Name != "Default" ||
		!slices.Equal(doc.Auth.Identity.Methods, []string{"password"}) {
		k.mu.Unlock()
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	tok := k.issueLocked(pw.User.Name, u, k.tokenTTL)
	t := *k.tokens[tok]
	k.mu.Unlock()
	w.Header().Set("X-Subject-Token", tok)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tokenDoc(&t))
}

func (k *fakeKeystone) validate(w http.ResponseWriter, r *http.Request) {
	svc, ok := k.valid(r.Header.Get("X-Auth-Token"))
	if !ok {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	if !slices.Contains(svc.roles, "service") && !slices.Contains(svc.roles, "admin") {
		keystoneErr(w, http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:validate_token.")
		return
	}
	t, ok := k.valid(r.Header.Get("X-Subject-Token"))
	if !ok {
		keystoneErr(w, http.StatusNotFound, "Not Found", "Could not recognize Fernet token")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tokenDoc(t))
}

func tokenDoc(t *fakeToken) map[string]any {
	roles := []map[string]string{}
	for _, r := range t.roles {
		roles = append(roles, map[string]string{"id": "role-" + r, "name": r})
	}
	def := map[string]string{"id": "default", "name": "Default"}
	return map[string]any{"token": map[string]any{
		"methods":    []string{"password"},
		"user":       map[string]any{"id": "id-" + t.user, "name": t.user, "domain": def},
		"project":    map[string]any{"id": "id-" + t.project, "name": t.project, "domain": def},
		"roles":      roles,
		"audit_ids":  []string{"audit-1"},
		"is_domain":  false,
		"issued_at":  t.issued.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"expires_at": t.expires.UTC().Format("2006-01-02T15:04:05.000000Z"),
	}}
}

// options are a Validator's options for this fake, as the corral service user.
func (k *fakeKeystone) options() Options {
	return Options{
		AuthURL:     k.srv.URL + "/v3",
		Username:    "corral",
		Password:    "corral-pw",
		ProjectName: "service",
	}
}

func (k *fakeKeystone) String() string { return fmt.Sprintf("fake keystone at %s", k.srv.URL) }
