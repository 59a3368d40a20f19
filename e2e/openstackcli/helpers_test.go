// Package openstackcli drives corral only through Debian's `openstack`
// CLI (python3-openstackclient), with password authentication against the
// real control plane of scripts/openstack-up.sh: Keystone, Glance and a
// Keystone-protected Ironic, and, for TestOpenStackCLINeutron, the Neutron
// of scripts/neutron-up.sh with that Ironic's nodes on its flat network
// interface. After each command it reads Ironic's (and Neutron's) own
// state to check that corral did what the CLI shows. The tests skip when
// the control plane's env file is not exported (OS_AUTH_URL, GLANCE_URL,
// OPENSTACK_IRONIC_URL; NEUTRON_ENV for Neutron) or the CLI is missing,
// loudly, and fail so in CI (testkit.Missing).
package openstackcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/testkit"
)

// cloud is the control plane and the corral agents inside it.
type cloud struct {
	t       *testing.T
	env     func(string) string
	ironic  *e2e.Ironic
	cluster *e2e.Cluster
	dir     string
}

// needCloud reads the control plane's env, or skips the test.
func needCloud(t *testing.T) *cloud {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
	for _, k := range []string{"OS_AUTH_URL", "GLANCE_URL", "OPENSTACK_IRONIC_URL"} {
		if os.Getenv(k) == "" {
			testkit.Missing(t, k+" is not set: corral is not tested with the openstack CLI (start the control plane with "+
				"`OPENSTACK_DIR=/tmp/corral-openstack scripts/openstack-up.sh` and export the env file it prints: "+
				"`set -a; . /tmp/corral-openstack/openstack.env; set +a`)")
		}
	}
	if _, err := exec.LookPath("openstack"); err != nil {
		testkit.Missing(t, "the openstack CLI is not installed: corral is not tested with it (apt-get install python3-openstackclient)")
	}
	for _, k := range []string{"OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME", "CORRAL_SERVICE_USERNAME", "CORRAL_SERVICE_PASSWORD", "SERVICE_PROJECT"} {
		if os.Getenv(k) == "" {
			t.Fatalf("OS_AUTH_URL is set but %s is not: export the whole env file of scripts/openstack-up.sh", k)
		}
	}
	return &cloud{t: t, env: os.Getenv, dir: t.TempDir()}
}

// provider logs a user in with a password.
func (c *cloud) provider(user, pw, project string) *gophercloud.ProviderClient {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: c.env("OS_AUTH_URL"),
		Username: user, Password: pw, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: project, DomainName: "Default"}})
	if err != nil {
		c.t.Fatalf("log %s in to project %s: %v", user, project, err)
	}
	return pc
}

// enroll puts n available nodes of a new resource class into the real
// Ironic (as the corral service user, the endpoint from the catalog); they
// are undeployed and deleted when the test ends.
func (c *cloud) enroll(n int) (class string, ids []string) {
	c.t.Helper()
	c.keystoneIronic()
	class = c.ironic.Class("gold")
	return class, c.ironic.EnrollNodes(c.t, n, class)
}

// keystoneIronic is the Keystone-protected Ironic, driven as the corral
// service user (the endpoint from the catalog).
func (c *cloud) keystoneIronic() {
	c.t.Helper()
	pc := c.provider(c.env("CORRAL_SERVICE_USERNAME"), c.env("CORRAL_SERVICE_PASSWORD"), c.env("SERVICE_PROJECT"))
	c.ironic = e2e.KeystoneIronic(c.t, c.env("OPENSTACK_IRONIC_URL"), pc, "cli")
}

// start runs n agents validating Keystone tokens, reaching Ironic as the
// corral service user and checking images in Glance.
func (c *cloud) start(n int) {
	c.t.Helper()
	c.startWith(n, "")
}

// startWith is start with more configuration (INI sections) for every agent.
func (c *cloud) startWith(n int, extra string) {
	c.t.Helper()
	auth := c.env("OS_AUTH_URL")
	conf := fmt.Sprintf(`[auth]
strategy = keystone
peer_token = openstackcli-peer-token-0123456789

[keystone_authtoken]
auth_url = %[1]s
username = %[2]s
password = %[3]s
project_name = %[4]s
token_cache_time = 10

[ironic]
auth_type = password
auth_url = %[1]s
username = %[2]s
password = %[3]s
project_name = %[4]s
sync_interval = 1s

[glance]
url = %[5]s
`, auth, c.env("CORRAL_SERVICE_USERNAME"), c.env("CORRAL_SERVICE_PASSWORD"), c.env("SERVICE_PROJECT"), c.env("GLANCE_URL")) + extra
	path := filepath.Join(c.dir, "corral.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		c.t.Fatal(err)
	}
	// The CLI finds corral's compute API in Keystone's catalog (novaclient
	// ignores endpoint overrides): the first agent serves at that address.
	u, err := url.Parse(c.env("CORRAL_COMPUTE_URL"))
	if err != nil || u.Port() == "" {
		c.t.Fatalf("CORRAL_COMPUTE_URL %q is not the URL of the catalog's compute endpoint", c.env("CORRAL_COMPUTE_URL"))
	}
	ip := net.ParseIP(u.Hostname()).To4()
	if ip == nil || ip[0] != 127 || ip[1] != 0 || ip[2] != 0 || ip[3] < 2 || ip[3] > 250 {
		c.t.Fatalf("CORRAL_COMPUTE_URL %q: the catalog's compute endpoint must be on 127.0.0.2 to 127.0.0.250", u)
	}
	port, _ := strconv.Atoi(u.Port())
	c.cluster = e2e.StartWith(c.t, n, e2e.Options{BaseIP: int(ip[3]), ExtraArgs: []string{"--config", path}},
		func(i int, a *e2e.Agent) {
			if i == 0 {
				a.HTTPPort = port
			}
		})
	c.cluster.AwaitReady(60 * time.Second)
	for _, a := range c.cluster.Agents {
		if !a.Running() {
			c.t.Fatalf("agent %s exited during start-up (see its log in %s)", a.Name, c.cluster.Dir)
		}
	}
}

// computeVersion is the compute microversion the CLI asks for.
const computeVersion = "2.79"

// osc runs `openstack ARGS...` as the admin, corral's compute API being the
// first agent's; it fails the test when the command fails.
func (c *cloud) osc(args ...string) string {
	c.t.Helper()
	out, err := c.oscErr(args...)
	if err != nil {
		c.t.Fatalf("openstack %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// oscErr runs the CLI and returns its output and error.
func (c *cloud) oscErr(args ...string) (string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openstack", args...)
	cmd.Env = c.cliEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	c.t.Logf("openstack %s (%s)", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	return out.String(), err
}

// show runs a CLI command with `-f json` and decodes its object.
func (c *cloud) show(args ...string) map[string]any {
	c.t.Helper()
	out := c.osc(append(args, "-f", "json")...)
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		c.t.Fatalf("openstack %s: not a JSON object: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// list runs a CLI list command with `-f json`.
func (c *cloud) list(args ...string) []map[string]any {
	c.t.Helper()
	out := c.osc(append(args, "-f", "json")...)
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		c.t.Fatalf("openstack %s: not a JSON list: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// node reads an Ironic node.
func (c *cloud) node(id string) *nodes.Node {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := c.ironic.Node(ctx, id)
	if err != nil {
		c.t.Fatalf("read Ironic node %s: %v", id, err)
	}
	return n
}

// serverNode is the Ironic node holding the server.
func (c *cloud) serverNode(server string, nodeIDs []string) *nodes.Node {
	c.t.Helper()
	for _, id := range nodeIDs {
		if n := c.node(id); n.InstanceUUID == server {
			return n
		}
	}
	c.t.Fatalf("no Ironic node holds server %s", server)
	return nil
}

// eventually polls f until it succeeds or the timeout passes.
func (c *cloud) eventually(timeout time.Duration, f func() error) {
	c.t.Helper()
	testkit.Eventually(c.t, timeout, f)
}

// waitServer polls `server show` until the server has status want and no task.
func (c *cloud) waitServer(id, want string) map[string]any {
	c.t.Helper()
	var v map[string]any
	c.eventually(3*time.Minute, func() error {
		v = c.show("server", "show", id)
		if v["status"] != want || v["OS-EXT-STS:task_state"] != nil {
			return fmt.Errorf("server %s is %v/%v, want %s", id, v["status"], v["OS-EXT-STS:task_state"], want)
		}
		return nil
	})
	return v
}

// cliEnv is the CLI's environment: the control plane's env file (the
// admin's password login) and the compute microversion.
func (c *cloud) cliEnv() []string {
	return append(os.Environ(), "OS_COMPUTE_API_VERSION="+computeVersion)
}
