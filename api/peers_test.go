package api_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/cluster/tlsutil"
	"github.com/corral-dev/corral/fsm"
)

// flavorCommand is an encoded log command, as a follower forwards one.
func flavorCommand(t *testing.T, id string) string {
	t.Helper()
	b, err := fsm.Encode(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: id, Name: id, VCPUs: 1, RAM: 1, Disk: 1, IsPublic: true}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The peers' endpoints take a peer's identity only: a static admin token
// commits nothing to the log through them, and the peer token, which does,
// is no credential on the public API.
func TestPeerEndpointsAcceptOnlyPeers(t *testing.T) {
	e := newEnv(t)
	before := e.digest()
	for _, tok := range []string{adminToken, readerToken, "", "not-a-token-at-all"} {
		if r := do(t, e.ts, "POST", api.ApplyPath, tok, flavorCommand(t, "by-user"), nil); r.code != http.StatusForbidden {
			t.Errorf("apply with token %q: %s, want 403", tok, r)
		}
		if r := do(t, e.ts, "GET", api.ReadIndexPath, tok, "", nil); r.code != http.StatusForbidden {
			t.Errorf("read-index with token %q: %s, want 403", tok, r)
		}
	}
	if r := do(t, e.ts, "GET", api.ReadIndexPath, adminToken, "", nil); !strings.Contains(string(r.body), "peers only") {
		t.Errorf("the refusal does not say the endpoint is for peers: %s", r)
	}
	if e.digest() != before {
		t.Fatal("a user's token wrote to the log through the peers' endpoint")
	}
	if r := do(t, e.ts, "POST", api.ApplyPath, clustertest.PeerToken, flavorCommand(t, "by-peer"), nil); r.code != http.StatusOK {
		t.Fatalf("apply with the peer token: %s", r)
	}
	if _, err := e.peer.Node.Store().Flavor("by-peer"); err != nil {
		t.Fatalf("the peer's command was not applied: %v", err)
	}
	for _, path := range []string{"/v1/hosts", computeBase + "/flavors"} {
		r := do(t, e.ts, "GET", path, clustertest.PeerToken, "", nil)
		if r.code != http.StatusUnauthorized || !strings.Contains(string(r.body), "peers' token") {
			t.Errorf("GET %s with the peer token: %s, want 401 naming the peers' token", path, r)
		}
	}
}

// A Keystone admin is no peer either; its token is not even sent to
// Keystone on the peers' endpoints.
func TestPeerEndpointsRefuseKeystoneAdmin(t *testing.T) {
	e := newKeystoneEnv(t, time.Minute)
	e.ks.issue("ks-admin", "root", "admin", "admin")
	if r := do(t, e.ts, "GET", "/v1/hosts", "ks-admin", "", nil); r.code != http.StatusOK {
		t.Fatalf("a Keystone admin on the public API: %s", r)
	}
	validated := e.ks.validates.Load()
	if r := do(t, e.ts, "GET", api.ReadIndexPath, "ks-admin", "", nil); r.code != http.StatusForbidden {
		t.Fatalf("a Keystone admin on read-index: %s, want 403", r)
	}
	if r := do(t, e.ts, "POST", api.ApplyPath, "ks-admin", flavorCommand(t, "by-keystone"), nil); r.code != http.StatusForbidden {
		t.Fatalf("a Keystone admin on apply: %s, want 403", r)
	}
	if n := e.ks.validates.Load(); n != validated {
		t.Fatalf("the peers' endpoints asked Keystone about a token (%d validations)", n-validated)
	}
}

// The API's body limit holds on the peers' endpoints, with or without a
// Content-Length.
func TestPeerEndpointsBodyLimit(t *testing.T) {
	p := startCluster(t, 1).Leader(10 * time.Second)
	ts := serveLimited(t, p, api.Config{Limits: core.Limits{MaxBodyBytes: 2048}})
	big := flavorCommand(t, strings.Repeat("x", 4096))
	for _, path := range []string{api.ApplyPath, api.PeerKeyringPath, api.PeerRemovePeerPath} {
		if r := do(t, ts, "POST", path, clustertest.PeerToken, big, nil); r.code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes: %s, want 413", path, len(big), r)
		}
	}
	// Without a Content-Length, the limit holds while the command is read.
	req, _ := http.NewRequest("POST", ts.URL+api.ApplyPath, bytes.NewBufferString(big))
	req.ContentLength = -1
	req.Header.Set("X-Auth-Token", clustertest.PeerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST %s, chunked, with %d bytes: %d, want 413", api.ApplyPath, len(big), resp.StatusCode)
	}
	if r := do(t, ts, "POST", api.ApplyPath, clustertest.PeerToken, flavorCommand(t, "small"), nil); r.code != http.StatusOK {
		t.Fatalf("a command under the limit: %s", r)
	}
}

// testCA makes a CA and loads the [tls] of peer name from it.
type testCA struct {
	t  *testing.T
	ca *tlsutil.CA
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	ca, err := tlsutil.NewCA("api test CA", 1)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{t: t, ca: ca}
}

func (c testCA) peer(name string) *tlsutil.Config {
	c.t.Helper()
	dir := c.t.TempDir()
	caPEM, _, _ := c.ca.PEM()
	cert, key, err := c.ca.Sign(tlsutil.CertRequest{CommonName: name, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Days: 1})
	if err != nil {
		c.t.Fatal(err)
	}
	f := tlsutil.Files{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "c.pem"), KeyFile: filepath.Join(dir, "k.pem"), VerifyOutgoing: true}
	for p, b := range map[string][]byte{f.CAFile: caPEM, f.CertFile: cert, f.KeyFile: key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			c.t.Fatal(err)
		}
	}
	tc, err := tlsutil.Load(f)
	if err != nil {
		c.t.Fatal(err)
	}
	return tc
}

// client returns a TLS client config presenting a CLI certificate.
func (c testCA) client(name string) *tls.Config {
	c.t.Helper()
	certPEM, keyPEM, err := c.ca.Sign(tlsutil.CertRequest{CommonName: name, Client: true, Days: 1})
	if err != nil {
		c.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		c.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.Cert)
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}
}

// With TLS, a peer's certificate is what the peers' endpoints take: the
// CLI's client certificate is refused whatever token comes with it, and
// so is the peer token without a peer certificate.
func TestPeerEndpointsOverTLS(t *testing.T) {
	ca := newTestCA(t)
	self := ca.peer("p1")
	h := clustertest.Start(t, 1, clustertest.Options{Tweak: func(cfg *cluster.Config) { cfg.TLS = self }})
	p := h.Leader(10 * time.Second)
	srv, err := api.New(api.Config{Tokens: map[string]core.Role{adminToken: core.RoleAdmin}, Peers: p.Node,
		Registry: p.Registry, Gatherer: p.Registry, Logger: slog.New(slog.DiscardHandler)}, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.TLS = self.APIServer()
	ts.StartTLS()
	t.Cleanup(ts.Close)
	addr := strings.TrimPrefix(ts.URL, "https://")

	// A follower forwarding with its peer certificate.
	other := ca.peer("p2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := forward.NewClient("", other.ForwardClient(), api.PeerPaths().Paths).ReadIndex(ctx, addr, false); err != nil {
		t.Fatalf("a peer's certificate on read-index: %v", err)
	}
	if _, err := forward.NewClient("", other.ForwardClient(), api.PeerPaths().Paths).Apply(ctx, addr, []byte(flavorCommand(t, "over-tls"))); err != nil {
		t.Fatalf("a peer's certificate on apply: %v", err)
	}
	// With TLS the certificate is the credential, whatever token comes with it.
	if _, err := forward.NewClient(adminToken, other.ForwardClient(), api.PeerPaths().Paths).ReadIndex(ctx, addr, false); err != nil {
		t.Fatalf("a peer's certificate with a user's token on read-index: %v", err)
	}
	// Users: the CLI's certificate with an admin token, or the peer token
	// without a peer certificate.
	for what, tc := range map[string]struct {
		cfg   *tls.Config
		token string
	}{
		"client certificate and admin token": {ca.client("admin"), adminToken},
		"client certificate and peer token":  {ca.client("admin"), clustertest.PeerToken},
		"no certificate and peer token":      {&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.client("x").RootCAs}, clustertest.PeerToken},
	} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc.cfg}, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", ts.URL+api.ReadIndexPath, nil)
		req.Header.Set("X-Auth-Token", tc.token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s on read-index: %d, want 403", what, resp.StatusCode)
		}
	}
}
