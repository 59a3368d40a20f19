// Package keystone runs corral inside a real OpenStack control plane
// (scripts/openstack-up.sh): agents validate their callers' tokens with
// Keystone ([auth] strategy = keystone) and reach a Keystone-protected
// Ironic as the corral service user ([ironic] auth_type = password, the
// endpoint from Keystone's catalog). The tests skip when OS_AUTH_URL is
// not set (load the env file the script prints).
package keystone

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic/contract"
)

const (
	baseIP    = 80 // agents listen on 127.0.0.80 and up, apart from other e2e packages
	cacheTime = 10 * time.Second
)

// cloud is the control plane of the environment: Keystone, its users, and the Ironic behind it.
type cloud struct {
	authURL   string
	ironicURL string
	env       func(string) string
}

// realCloud reads the control plane's env file (exported), or skips the test.
func realCloud(t *testing.T) *cloud {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	c := &cloud{authURL: os.Getenv("OS_AUTH_URL"), ironicURL: os.Getenv("OPENSTACK_IRONIC_URL"), env: os.Getenv}
	if c.authURL == "" || c.ironicURL == "" {
		t.Skip("OS_AUTH_URL or OPENSTACK_IRONIC_URL is not set: start the control plane with " +
			"`OPENSTACK_DIR=/tmp/corral-openstack scripts/openstack-up.sh` and export the env file it prints " +
			"(`set -a; . /tmp/corral-openstack/openstack.env; set +a`)")
	}
	for _, k := range []string{"CORRAL_SERVICE_USERNAME", "ALICE_USERNAME", "BOB_USERNAME", "CAROL_USERNAME", "OS_USERNAME"} {
		if os.Getenv(k) == "" {
			t.Fatalf("OS_AUTH_URL is set but %s is not: export the whole env file of scripts/openstack-up.sh", k)
		}
	}
	return c
}

// user is a Keystone user's project-scoped token.
type user struct {
	name, token, projectID, userID string
}

// login gets a token of the user named by the env prefix (ALICE, BOB, CAROL; "OS" for the admin).
func (c *cloud) login(t *testing.T, who string) user {
	t.Helper()
	name, pw, project := c.env(who+"_USERNAME"), c.env(who+"_PASSWORD"), c.env(who+"_PROJECT")
	if who == "OS" {
		project = c.env("OS_PROJECT_NAME")
	}
	pc := c.provider(t, name, pw, project)
	res, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		t.Fatalf("log %s in: no token document", name)
	}
	p, err := res.ExtractProject()
	if err != nil || p == nil {
		t.Fatalf("log %s in: project of the token: %v", name, err)
	}
	u, err := res.ExtractUser()
	if err != nil {
		t.Fatalf("log %s in: user of the token: %v", name, err)
	}
	return user{name: name, token: pc.Token(), projectID: p.ID, userID: u.ID}
}

func (c *cloud) provider(t *testing.T, user, pw, project string) *gophercloud.ProviderClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: c.authURL, Username: user,
		Password: pw, DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: project, DomainName: "Default"}})
	if err != nil {
		t.Fatalf("log %s in to project %s: %v", user, project, err)
	}
	return pc
}

// revoke has the admin revoke a token in Keystone.
func (c *cloud) revoke(t *testing.T, token string) {
	t.Helper()
	admin := c.provider(t, c.env("OS_USERNAME"), c.env("OS_PASSWORD"), c.env("OS_PROJECT_NAME"))
	id, err := openstack.NewIdentityV3(admin, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tokens.Revoke(ctx, id, token).Err; err != nil {
		t.Fatalf("revoke a token: %v", err)
	}
}

// ironic is the Keystone-protected Ironic, driven as the corral service user for enrollment.
func (c *cloud) ironic(t *testing.T) *e2e.Ironic {
	t.Helper()
	env, err := contract.NewEnv(c.ironicURL, true)
	if err != nil {
		t.Fatal(err)
	}
	pc := c.provider(t, c.env("CORRAL_SERVICE_USERNAME"), c.env("CORRAL_SERVICE_PASSWORD"), c.env("SERVICE_PROJECT"))
	sc, err := openstack.NewBareMetalV1(pc, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatalf("baremetal endpoint in Keystone's catalog: %v", err)
	}
	sc.Microversion = contract.Microversion
	env.Client = sc
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	env.Prefix = fmt.Sprintf("ks%x", b)
	return &e2e.Ironic{URL: env.Root, Real: true, Env: env}
}

// gate is an HTTP proxy to Keystone that can be cut, as a Keystone outage: while down, it drops
// every connection.
type gate struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// url is Keystone's identity endpoint through the gate.
func (g *gate) url(authURL string) string {
	u, _ := url.Parse(authURL)
	return g.srv.URL + u.Path
}

// start runs n agents with README.md's Keystone configuration, the environment pointing it at this
// control plane: callers' tokens validated through the gate, Ironic found in the catalog and
// reached as the corral service user.
func (c *cloud) start(t *testing.T, n int, g *gate) *e2e.Cluster {
	t.Helper()
	return c.startAt(t, n, g, baseIP)
}

// startAt is start with the first agent on 127.0.0.<base> and more KEY=VALUE environment.
func (c *cloud) startAt(t *testing.T, n int, g *gate, base int, extraEnv ...string) *e2e.Cluster {
	t.Helper()
	svc := []string{"USERNAME=" + c.env("CORRAL_SERVICE_USERNAME"), "PASSWORD=" + c.env("CORRAL_SERVICE_PASSWORD"),
		"PROJECT_NAME=" + c.env("SERVICE_PROJECT")}
	env := []string{"CORRAL_IRONIC_SYNC_INTERVAL=1s", "CORRAL_AUTH_STRATEGY=keystone",
		"CORRAL_KEYSTONE_AUTHTOKEN_AUTH_URL=" + g.url(c.authURL),
		"CORRAL_KEYSTONE_AUTHTOKEN_WWW_AUTHENTICATE_URI=" + c.authURL,
		fmt.Sprintf("CORRAL_KEYSTONE_AUTHTOKEN_TOKEN_CACHE_TIME=%d", int(cacheTime.Seconds())),
		"CORRAL_IRONIC_AUTH_TYPE=password", "CORRAL_IRONIC_AUTH_URL=" + c.authURL}
	for _, kv := range svc {
		env = append(env, "CORRAL_KEYSTONE_AUTHTOKEN_"+kv, "CORRAL_IRONIC_"+kv)
	}
	env = append(env, extraEnv...)
	cl := e2e.Start(t, n, e2e.Options{BaseIP: base, Env: env, ExtraArgs: []string{"--config", readmeConfig(t)}})
	cl.AwaitReady(60 * time.Second)
	for _, a := range cl.Agents {
		if !a.Running() {
			t.Fatalf("agent %s exited during start-up (see its log in %s)", a.Name, cl.Dir)
		}
	}
	return cl
}

// compute is a compute client of the agent carrying a Keystone token.
func compute(a *e2e.Agent, token string) *gophercloud.ServiceClient {
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: 30 * time.Second}}
	pc.SetToken(token)
	u := a.URL() + "/compute/v2.1/"
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: u, ResourceBase: u, Type: "compute",
		Microversion: e2e.ComputeMicroversion}
}

// raw sends one request with the headers and returns status, headers and body.
func raw(t *testing.T, method, u string, hdr http.Header, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// foreignToken looks like a Fernet token but no Keystone here issued it (as one of another
// Keystone, encrypted with other keys).
func foreignToken() string {
	b := make([]byte, 160)
	_, _ = rand.Read(b)
	return "gAAAAA" + base64.RawURLEncoding.EncodeToString(b)
}
