package openstackcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenStackCLI boots, drives and deletes bare-metal servers with the
// commands an operator types, and checks Ironic after each.
func TestOpenStackCLI(t *testing.T) {
	c := needCloud(t)
	class, nodeIDs := c.enroll(2)
	c.start(2)
	dir := t.TempDir()

	// Images in Glance.
	img := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(img, []byte(strings.Repeat("corral", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(class, "-gold")
	image := func(name string) string {
		v := c.show("image", "create", "--disk-format", "raw", "--container-format", "bare", "--file", img, "--public", prefix+"-"+name)
		id := v["id"].(string)
		t.Cleanup(func() { _, _ = c.oscErr("image", "delete", id) })
		c.eventually(time.Minute, func() error {
			if s := c.show("image", "show", id)["status"]; s != "active" {
				return fmt.Errorf("image %s is %v", id, s)
			}
			return nil
		})
		return id
	}
	img1, img2 := image("one"), image("two")

	// A flavor for the nodes' class, and its description (2.55).
	flavor := prefix + "-bm"
	rc := "CUSTOM_" + strings.ToUpper(strings.NewReplacer("-", "_").Replace(class))
	c.osc("flavor", "create", "--ram", "1024", "--disk", "10", "--vcpus", "1",
		"--property", "resources:"+rc+"=1", "--property", "resources:VCPU=0",
		"--property", "resources:MEMORY_MB=0", "--property", "resources:DISK_GB=0", flavor)
	t.Cleanup(func() { _, _ = c.oscErr("flavor", "delete", flavor) })
	c.osc("flavor", "set", "--description", "gold bare metal", flavor)
	if d := c.show("flavor", "show", flavor)["description"]; d != "gold bare metal" {
		t.Fatalf("flavor description %v", d)
	}

	// A key pair, imported, and user data.
	pub := filepath.Join(dir, "id.pub")
	if err := os.WriteFile(pub, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID2S6HUhRL4srmCu+1n4Z7ODHe0isDXOR3Z2Gaq508qn cli@corral\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := prefix + "-key"
	c.osc("keypair", "create", "--public-key", pub, key)
	t.Cleanup(func() { _, _ = c.oscErr("keypair", "delete", key) })
	if fp := c.show("keypair", "show", key)["fingerprint"]; fp != "42:80:77:5c:38:00:d4:34:b8:d9:18:e0:84:76:75:fc" {
		t.Fatalf("key pair fingerprint %v", fp)
	}
	userData := filepath.Join(dir, "user-data")
	if err := os.WriteFile(userData, []byte("#cloud-config\nruncmd: [touch, /root/corral]\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Boot.
	name := prefix + "-web"
	v := c.show("server", "create", "--flavor", flavor, "--image", img1, "--key-name", key,
		"--user-data", userData, "--network", "none", "--wait", name)
	id := v["id"].(string)
	if v["status"] != "ACTIVE" || v["key_name"] != key {
		t.Fatalf("server create: %v", v)
	}
	n := c.serverNode(id, nodeIDs)
	if n.ProvisionState != "active" || n.InstanceInfo["image_source"] != img1 || n.InstanceInfo["configdrive"] == nil {
		t.Fatalf("Ironic node %s after the boot: %s, instance_info %v", n.UUID, n.ProvisionState, n.InstanceInfo)
	}
	if rows := c.list("server", "list", "--name", name); len(rows) != 1 || rows[0]["Status"] != "ACTIVE" {
		t.Fatalf("server list: %v", rows)
	}
	if _, err := c.oscErr("server", "create", "--flavor", flavor, "--image", img1, "--key-name", "no-such-key",
		"--network", "none", prefix+"-nokey"); err == nil {
		t.Fatal("a boot with an unknown key name succeeded")
	}

	// Stop, start, reboot (soft and hard): Ironic's power state follows.
	c.osc("server", "stop", id)
	v = c.waitServer(id, "SHUTOFF")
	if v["OS-EXT-STS:power_state"] != "Shutdown" && v["OS-EXT-STS:power_state"] != float64(4) {
		t.Fatalf("stopped server's power state %v", v["OS-EXT-STS:power_state"])
	}
	if p := c.node(n.UUID).PowerState; p != "power off" {
		t.Fatalf("stopped server's node is %q", p)
	}
	c.osc("server", "start", id)
	c.waitServer(id, "ACTIVE")
	if p := c.node(n.UUID).PowerState; p != "power on" {
		t.Fatalf("started server's node is %q", p)
	}
	c.osc("server", "reboot", "--wait", id)
	c.osc("server", "reboot", "--hard", "--wait", id)
	if p := c.node(n.UUID).PowerState; p != "power on" {
		t.Fatalf("rebooted server's node is %q", p)
	}

	// Rebuild with another image.
	c.osc("server", "rebuild", "--image", img2, "--wait", id)
	v = c.waitServer(id, "ACTIVE")
	if got := c.node(n.UUID).InstanceInfo["image_source"]; got != img2 {
		t.Fatalf("rebuilt node's image_source %v, want %s", got, img2)
	}
	if im, _ := v["image"].(string); !strings.Contains(im, img2) {
		t.Fatalf("rebuilt server shows image %v", v["image"])
	}

	// Rename.
	c.osc("server", "set", "--name", name+"-2", id)
	if got := c.show("server", "show", id)["name"]; got != name+"-2" {
		t.Fatalf("renamed server is %v", got)
	}

	// Hypervisors: one per node, the server's on its owner host.
	owner := c.show("server", "show", id)["OS-EXT-SRV-ATTR:host"].(string)
	hv := c.show("hypervisor", "show", n.UUID)
	if hv["hypervisor_type"] != "ironic" || hv["service_host"] != owner || hv["state"] != "up" {
		t.Fatalf("hypervisor show %s: %v (owner %s)", n.UUID, hv, owner)
	}
	found := 0
	for _, row := range c.list("hypervisor", "list") {
		for _, nid := range nodeIDs {
			if row["Hypervisor Hostname"] == nid {
				found++
			}
		}
	}
	if found != len(nodeIDs) {
		t.Fatalf("hypervisor list shows %d of the %d nodes", found, len(nodeIDs))
	}

	// Compute services: one per agent, up.
	services := c.list("compute", "service", "list", "--service", "nova-compute")
	if len(services) != len(c.cluster.Agents) {
		t.Fatalf("compute service list: %v", services)
	}
	for _, s := range services {
		if s["State"] != "up" || s["Status"] != "enabled" {
			t.Fatalf("compute service %v", s)
		}
	}

	// Disabling the owner drains it: the server moves, a new boot avoids it.
	c.osc("compute", "service", "set", "--disable", "--disable-reason", "rack maintenance", owner, "nova-compute")
	svc := c.list("compute", "service", "list", "--host", owner, "--long")
	if len(svc) != 1 || svc[0]["Status"] != "disabled" || svc[0]["Disabled Reason"] != "rack maintenance" {
		t.Fatalf("disabled service: %v", svc)
	}
	c.eventually(time.Minute, func() error {
		if h := c.show("server", "show", id)["OS-EXT-SRV-ATTR:host"]; h == owner {
			return fmt.Errorf("server %s still on the disabled host %s", id, owner)
		}
		return nil
	})
	v2 := c.show("server", "create", "--flavor", flavor, "--image", img1, "--network", "none", "--wait", name+"-b")
	id2 := v2["id"].(string)
	if h := v2["OS-EXT-SRV-ATTR:host"]; h == owner {
		t.Fatalf("a boot landed on the disabled host %s", owner)
	}
	c.osc("compute", "service", "set", "--enable", owner, "nova-compute")
	if svc := c.list("compute", "service", "list", "--host", owner); svc[0]["Status"] != "enabled" {
		t.Fatalf("enabled service: %v", svc)
	}

	// Forcing a live host down moves its servers; gossip brings it back up.
	other := c.show("server", "show", id)["OS-EXT-SRV-ATTR:host"].(string)
	c.osc("compute", "service", "set", "--down", other, "nova-compute")
	c.eventually(time.Minute, func() error {
		if h := c.show("server", "show", id)["OS-EXT-SRV-ATTR:host"]; h == other {
			return fmt.Errorf("server %s still on the forced-down host %s", id, other)
		}
		return nil
	})
	c.eventually(time.Minute, func() error {
		if s := c.list("compute", "service", "list", "--host", other); s[0]["State"] != "up" {
			return fmt.Errorf("host %s is %v", other, s[0]["State"])
		}
		return nil
	})

	// Delete: Ironic's nodes are free again.
	c.osc("server", "delete", "--wait", id, id2)
	c.eventually(3*time.Minute, func() error {
		for _, nid := range nodeIDs {
			if nd := c.node(nid); nd.InstanceUUID != "" || nd.ProvisionState == "active" {
				return fmt.Errorf("node %s still holds %s (%s)", nid, nd.InstanceUUID, nd.ProvisionState)
			}
		}
		return nil
	})
}
