package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// TestRouteTableRoles holds every route to the role its table line names:
// public routes answer without a token, reader routes answer a reader,
// admin routes refuse a reader before their handler runs, the peers'
// routes refuse every user's token.
func TestRouteTableRoles(t *testing.T) {
	h := clustertest.Start(t, 1, clustertest.Options{})
	p := h.Leader(10 * time.Second)
	s, err := New(Config{
		Tokens:   map[string]core.Role{"admin": core.RoleAdmin, "reader": core.RoleReader},
		Registry: p.Registry, Gatherer: p.Registry, Logger: slog.New(slog.DiscardHandler),
	}, p.Node)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	// Once the peer has registered its own host and the leader enabled
	// the features, nothing but the test changes the state.
	testkit.Eventually(t, 10*time.Second, func() error {
		hst, err := p.Node.Store().Host(p.Name)
		if err != nil {
			return err
		}
		if hst.Status != fsm.HostUp {
			return fmt.Errorf("host %s is %s", hst.Name, hst.Status)
		}
		for name := range fsm.FeatureCommands {
			if !p.Node.Store().FeatureEnabled(name) {
				return fmt.Errorf("feature %s is off", name)
			}
		}
		return nil
	})
	before := p.Node.Store().Digest()

	seen := map[string]bool{}
	for _, r := range s.routeTable() {
		key := r.method + " " + r.path
		if seen[key] {
			t.Errorf("%s is in the route table twice", key)
		}
		seen[key] = true
		var path []string
		for _, seg := range strings.Split(r.path, "/") {
			if strings.HasPrefix(seg, ":") || seg == "*" {
				seg = "x"
			}
			path = append(path, seg)
		}
		send := func(token string) int {
			req, err := http.NewRequest(r.method, ts.URL+strings.Join(path, "/"), strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				req.Header.Set("X-Auth-Token", token)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		switch r.role {
		case core.RolePublic:
			if code := send(""); code == http.StatusUnauthorized || code == http.StatusForbidden {
				t.Errorf("public %s without a token: %d", key, code)
			}
		case core.RoleReader, core.RoleProjectReader: // the same for static tokens
			if code := send(""); code != http.StatusUnauthorized {
				t.Errorf("%s without a token: %d, want 401", key, code)
			}
			if code := send("reader"); code == http.StatusUnauthorized || code == http.StatusForbidden {
				t.Errorf("reader %s: %d", key, code)
			}
		case core.RoleAdmin, core.RoleProjectMember, core.RoleService: // the same for static tokens
			if code := send("reader"); code != http.StatusForbidden {
				t.Errorf("reader %s: %d, want 403", key, code)
			}
		case core.RolePeer: // no user's token, whatever its role
			for _, tok := range []string{"", "reader", "admin"} {
				if code := send(tok); code != http.StatusForbidden {
					t.Errorf("token %q on the peers' %s: %d, want 403", tok, key, code)
				}
			}
		default:
			t.Errorf("%s requires unknown role %q", key, r.role)
		}
	}
	if p.Node.Store().Digest() != before {
		t.Error("requests refused by role changed the state")
	}
}
