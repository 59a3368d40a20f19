package keystone

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

// deniedAdmin creates a user with the admin role (corral lets it use os-baremetal-nodes) and the
// role Ironic's policy refuses node listings to (scripts/openstack-up.sh), in project demo-a; it is
// deleted when the test ends. It returns the user's token.
func (c *cloud) deniedAdmin(t *testing.T) user {
	t.Helper()
	role := c.env("BAREMETAL_DENIED_ROLE")
	if role == "" {
		t.Fatal("OS_AUTH_URL is set but BAREMETAL_DENIED_ROLE is not: the control plane predates the role and " +
			"Ironic policy this test needs; run scripts/openstack-up.sh again (it adds both) and export its env file")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := c.provider(t, c.env("OS_USERNAME"), c.env("OS_PASSWORD"), c.env("OS_PROJECT_NAME"))
	id, err := openstack.NewIdentityV3(admin, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	roleID := func(name string) string {
		all, err := roles.List(id, roles.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := roles.ExtractRoles(all)
		if err != nil || len(rs) != 1 {
			t.Fatalf("Keystone role %s: %v, %d found (scripts/openstack-up.sh creates it)", name, err, len(rs))
		}
		return rs[0].ID
	}
	all, err := projects.List(id, projects.ListOpts{Name: c.env("DEMO_A_PROJECT")}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := projects.ExtractProjects(all)
	if err != nil || len(ps) != 1 {
		t.Fatalf("project %s: %v, %d found", c.env("DEMO_A_PROJECT"), err, len(ps))
	}
	name, pw := fmt.Sprintf("proxy-denied-%d", time.Now().UnixNano()), "corral-denied-pw"
	u, err := users.Create(ctx, id, users.CreateOpts{Name: name, Password: pw, DomainID: "default",
		DefaultProjectID: ps[0].ID}).Extract()
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if err := users.Delete(cctx, id, u.ID).ExtractErr(); err != nil {
			t.Errorf("delete user %s: %v", name, err)
		}
	})
	for _, r := range []string{"admin", role} {
		if err := roles.Assign(ctx, id, roleID(r), roles.AssignOpts{UserID: u.ID, ProjectID: ps[0].ID}).ExtractErr(); err != nil {
			t.Fatalf("give %s the role %s: %v", name, r, err)
		}
	}
	pc := c.provider(t, name, pw, c.env("DEMO_A_PROJECT"))
	return user{name: name, token: pc.Token(), projectID: ps[0].ID, userID: u.ID}
}

// logSize is the size of the file now (what is logged later comes after it).
func logSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("Ironic's log: %v (scripts/openstack-up.sh writes it under OPENSTACK_DIR)", err)
	}
	return fi.Size()
}

// proxyList lists os-baremetal-nodes through the agent with the token: the status and the node ids.
func proxyList(t *testing.T, a *e2e.Agent, token string) (int, []string, string) {
	t.Helper()
	code, _, body := raw(t, http.MethodGet, a.URL()+"/compute/v2.1/os-baremetal-nodes", http.Header{"X-Auth-Token": {token}}, "")
	var doc struct {
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	_ = json.Unmarshal([]byte(body), &doc)
	var ids []string
	for _, n := range doc.Nodes {
		ids = append(ids, n.ID)
	}
	return code, ids, body
}

// TestBaremetalProxyTokens: os-baremetal-nodes asks the Keystone-protected Ironic with the
// caller's own Keystone token, so that Ironic judges the caller's rights: a Keystone admin whose
// role Ironic's policy refuses gets Ironic's 403 for the list and 404 for a node, and Ironic's log
// shows that user's request. A
// caller with one of corral's static tokens is served with corral's service user (its static token
// would get Ironic's 401). With baremetal_proxy_auth = service, every caller is served as corral.
func TestBaremetalProxyTokens(t *testing.T) {
	cl := realCloud(t)
	logPath := filepath.Join(cl.env("OPENSTACK_DIR"), "ironic", "log", "ironic.log")
	if cl.env("OPENSTACK_DIR") == "" {
		t.Fatal("OS_AUTH_URL is set but OPENSTACK_DIR is not: export the whole env file of scripts/openstack-up.sh")
	}
	ir := cl.ironic(t)
	node := ir.EnrollNodes(t, 1, ir.Class("gold"))[0]
	denied, admin := cl.deniedAdmin(t), cl.login(t, "OS")

	// Ironic itself refuses the user's listing: the policy of scripts/openstack-up.sh is in place.
	if code, _, body := raw(t, http.MethodGet, cl.ironicURL+"/v1/nodes", http.Header{"X-Auth-Token": {denied.token},
		"X-OpenStack-Ironic-API-Version": {"1.60"}}, ""); code != http.StatusForbidden {
		t.Fatalf("Ironic lets a token with role %s list nodes (%d %s): its policy.yaml from scripts/openstack-up.sh "+
			"is missing; run the script again", cl.env("BAREMETAL_DENIED_ROLE"), code, body)
	}

	g := newGate(t, cl.authURL)
	c := cl.startAt(t, 2, g, baseIP+40)
	a := c.Agents[0]
	testkit.Eventually(t, 60*time.Second, func() error {
		if code, _, body := proxyList(t, a, c.Token); code != http.StatusOK {
			return fmt.Errorf("os-baremetal-nodes with a static token: %d %s", code, body)
		}
		return nil
	})
	if code, ids, body := proxyList(t, a, c.Token); code != http.StatusOK || !slices.Contains(ids, node) {
		t.Errorf("static token: %d %s, want 200 with node %s (corral's service user)", code, body, node)
	}
	if code, ids, body := proxyList(t, a, admin.token); code != http.StatusOK || !slices.Contains(ids, node) {
		t.Errorf("the Keystone admin: %d %s, want 200 with node %s", code, body, node)
	}
	show := func(token string) int {
		code, _, _ := raw(t, http.MethodGet, a.URL()+"/compute/v2.1/os-baremetal-nodes/"+node, http.Header{"X-Auth-Token": {token}}, "")
		return code
	}
	if s, ad, d := show(c.Token), show(admin.token), show(denied.token); s != http.StatusOK || ad != http.StatusOK || d != http.StatusNotFound {
		t.Errorf("os-baremetal-nodes/%s: static token %d, Keystone admin %d, the refused user %d; want 200, 200, 404", node, s, ad, d)
	}
	logged := logSize(t, logPath)
	if code, _, body := proxyList(t, a, denied.token); code != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) {
		t.Errorf("a Keystone admin that Ironic's policy refuses: %d %s, want Ironic's 403 in Nova's shape", code, body)
	}
	// Ironic's access log names the user and project of each request: the proxy's request was the
	// user's.
	who := denied.userID + " " + denied.projectID
	testkit.Eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b[min(logged, int64(len(b))):]), "\n") {
			if strings.Contains(line, who) && strings.Contains(line, `"GET /v1/nodes`) && strings.Contains(line, "status: 403") {
				return nil
			}
		}
		return fmt.Errorf("%s has no 403 to GET /v1/nodes by user %s of project %s since the proxy's request",
			logPath, denied.userID, denied.projectID)
	})
	c.StopAll()

	// As corral's service user for every caller.
	c = cl.startAt(t, 2, g, baseIP+42, "CORRAL_IRONIC_BAREMETAL_PROXY_AUTH=service")
	a = c.Agents[0]
	testkit.Eventually(t, 60*time.Second, func() error {
		code, ids, body := proxyList(t, a, denied.token)
		if code != http.StatusOK || !slices.Contains(ids, node) {
			return fmt.Errorf("baremetal_proxy_auth = service, the refused user: %d %s, want 200 with node %s", code, body, node)
		}
		if code, _, body := raw(t, http.MethodGet, a.URL()+"/compute/v2.1/os-baremetal-nodes/"+node,
			http.Header{"X-Auth-Token": {denied.token}}, ""); code != http.StatusOK {
			return fmt.Errorf("baremetal_proxy_auth = service, the refused user shows node %s: %d %s, want 200", node, code, body)
		}
		return nil
	})
}
