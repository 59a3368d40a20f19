package openstackcli

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/corral-dev/corral/testkit/realneutron"
)

// TestOpenStackCLINeutron boots bare-metal servers on the real Neutron with
// the commands an operator types (`server create --network`, `--nic
// net-id=...,v4-fixed-ip=...`, `--nic port-id=...`), the agents finding
// Neutron in Keystone's catalog and the nodes using Ironic's flat network
// interface; `server show` gives the ports' addresses; `server delete`
// leaves no port corral created and the user's port unbound.
func TestOpenStackCLINeutron(t *testing.T) {
	c := needCloud(t)
	env := realneutron.Load(t, "the openstack CLI with Neutron")
	env.IronicNeutron(t)
	admin := env.Login(t, realneutron.Admin)
	prov := env.Provider()

	c.keystoneIronic()
	class := c.ironic.Class("gold")
	nics := c.ironic.EnrollNetworkNodes(t, 3, class, "flat", env.Physnet(), env.AgentHosts())
	var nodeIDs []string
	for id := range nics {
		nodeIDs = append(nodeIDs, id)
	}
	sv := env.User(realneutron.Service)
	// Raft's heartbeat and election timeouts twice the defaults, as in
	// e2e/neutron: the agents share a loaded machine with Ironic, Neutron
	// and Keystone.
	c.startWith(2, fmt.Sprintf(`
[raft]
heartbeat_timeout = 2s
election_timeout = 2s
leader_lease_timeout = 1s

[neutron]
auth_type = password
auth_url = %s
username = %s
password = %s
project_name = %s
region_name = %s
valid_interfaces = public
`, env.AuthURL(), sv.Username, sv.Password, sv.Project, env.Region()))

	prefix := strings.TrimSuffix(class, "-gold")
	img := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(img, []byte(strings.Repeat("corral", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	image := c.show("image", "create", "--disk-format", "raw", "--container-format", "bare", "--file", img, "--public", prefix+"-img")["id"].(string)
	t.Cleanup(func() { _, _ = c.oscErr("image", "delete", image) })
	flavor := prefix + "-bm"
	rc := "CUSTOM_" + strings.ToUpper(strings.NewReplacer("-", "_").Replace(class))
	c.osc("flavor", "create", "--ram", "1024", "--disk", "10", "--vcpus", "1", "--property", "resources:"+rc+"=1",
		"--property", "resources:VCPU=0", "--property", "resources:MEMORY_MB=0", "--property", "resources:DISK_GB=0", flavor)
	t.Cleanup(func() { _, _ = c.oscErr("flavor", "delete", flavor) })
	c.eventually(time.Minute, func() error {
		if s := c.show("image", "show", image)["status"]; s != "active" {
			return fmt.Errorf("image %s is %v", image, s)
		}
		return nil
	})

	// The user's own port, made with the CLI.
	mine := c.show("port", "create", "--network", prov.Name, prefix+"-mine")["id"].(string)
	admin.DeletePortOnCleanup(t, mine)
	var servers []string
	admin.DeleteDevicePortsOnCleanup(t, func() []string { return servers }, mine)
	t.Cleanup(func() {
		if len(servers) > 0 {
			_, _ = c.oscErr(append([]string{"server", "delete", "--wait"}, servers...)...)
		}
	})
	create := func(name string, args ...string) string {
		t.Helper()
		v := c.show(append(append([]string{"server", "create", "--flavor", flavor, "--image", image}, args...), prefix+"-"+name)...)
		id := v["id"].(string)
		servers = append(servers, id)
		return id
	}
	began := time.Now()
	byNet := create("net", "--network", prov.Name)
	byPort := create("port", "--nic", "port-id="+mine)
	// The fixed IP is chosen once the other boot's port has its address.
	c.eventually(2*time.Minute, func() error {
		if ps := c.list("port", "list", "--device-id", byNet); len(ps) == 0 {
			return fmt.Errorf("server %s has no port yet", byNet)
		}
		return nil
	})
	fixed := freeAddress(t, admin, prov)
	byIP := create("fixed", "--nic", "net-id="+prov.NetworkID+",v4-fixed-ip="+fixed)
	shown := map[string]map[string]any{}
	for _, id := range servers {
		shown[id] = c.waitServer(id, "ACTIVE")
	}
	t.Logf("3 servers ACTIVE in %s", time.Since(began).Round(time.Millisecond))

	// server show's addresses are the ports' (the one Neutron lists with
	// the server as device), and the port is the node's VIF in Ironic.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	portOf := map[string]string{}
	for _, id := range servers {
		ps, err := admin.Ports(ctx, ports.ListOpts{DeviceID: id})
		if err != nil || len(ps) != 1 || len(ps[0].FixedIPs) != 1 {
			t.Errorf("server %s: ports %+v (%v), want one with one address", id, ps, err)
			continue
		}
		portOf[id] = ps[0].ID
		want := map[string][]string{prov.Name: {ps[0].FixedIPs[0].IPAddress}}
		if got := addresses(shown[id]["addresses"]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("server show %s: addresses %v, want %v", id, shown[id]["addresses"], want)
		}
		n := c.serverNode(id, nodeIDs)
		if vifs, err := c.ironic.VIFs(ctx, n.UUID); err != nil || !slices.Equal(vifs, []string{ps[0].ID}) {
			t.Errorf("Ironic's VIFs on node %s of server %s: %v (%v), want [%s]", n.UUID, id, vifs, err, ps[0].ID)
		}
	}
	if portOf[byPort] != mine {
		t.Errorf("server %s booted with --nic port-id=%s runs on port %s", byPort, mine, portOf[byPort])
	}
	if p := c.show("port", "show", mine); p["device_id"] != byPort || p["device_owner"] != "compute:nova" {
		t.Errorf("port show %s: device %v owner %v, want %s, compute:nova", mine, p["device_id"], p["device_owner"], byPort)
	}
	if got := addresses(shown[byIP]["addresses"])[prov.Name]; !slices.Equal(got, []string{fixed}) {
		t.Errorf("server %s booted with v4-fixed-ip=%s shows %v", byIP, fixed, shown[byIP]["addresses"])
	}

	began = time.Now()
	c.osc(append([]string{"server", "delete", "--wait"}, servers...)...)
	t.Logf("3 servers deleted in %s", time.Since(began).Round(time.Millisecond))
	for _, id := range servers {
		if ps := c.list("port", "list", "--device-id", id); len(ps) != 0 {
			t.Errorf("deleted server %s still has ports %v", id, ps)
		}
		if p := portOf[id]; p != "" && p != mine {
			if _, err := c.oscErr("port", "show", p); err == nil {
				t.Errorf("port %s that corral made for server %s outlives it", p, id)
			}
		}
	}
	if p := c.show("port", "show", mine); p["device_id"] != "" || p["device_owner"] != "" {
		t.Errorf("the user's port after the delete: device %v owner %v, want unbound", p["device_id"], p["device_owner"])
	}
	// A context of its own: the one of the checks above may have run out
	// during the deletes.
	vctx, vcancel := context.WithTimeout(context.Background(), time.Minute)
	defer vcancel()
	for _, id := range nodeIDs {
		if vifs, err := c.ironic.VIFs(vctx, id); err != nil || len(vifs) != 0 {
			t.Errorf("node %s keeps VIFs %v (%v)", id, vifs, err)
		}
	}
}

// addresses reads `server show -f json`'s addresses: {network: [IP, ...]}.
func addresses(v any) map[string][]string {
	out := map[string][]string{}
	m, _ := v.(map[string]any)
	for net, ips := range m {
		l, _ := ips.([]any)
		for _, ip := range l {
			out[net] = append(out[net], fmt.Sprint(ip))
		}
	}
	return out
}

// freeAddress picks an address of the provider subnet no port has.
func freeAddress(t *testing.T, admin *realneutron.Session, prov realneutron.Provider) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := admin.Ports(ctx, ports.ListOpts{NetworkID: prov.NetworkID})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			used[ip.IPAddress] = true
		}
	}
	pfx := netip.MustParsePrefix(prov.CIDR)
	b := pfx.Addr().As4()
	for range 1000 {
		n, _ := rand.Int(rand.Reader, big.NewInt(100))
		b[3] = byte(100 + n.Int64())
		if a := netip.AddrFrom4(b); pfx.Contains(a) && !used[a.String()] {
			return a.String()
		}
	}
	t.Fatalf("no free address in %s", prov.CIDR)
	return ""
}
