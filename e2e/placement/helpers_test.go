// Package placement_test drives corral's Placement features end to end:
// real agent processes of both host kinds (hypervisor and ironic), the
// Ironic simulator or a real Ironic, the Nova and Placement APIs, and the
// `corral manage ironic-flavor-migration` command.
package placement_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/wire"
)

const (
	// legacyEnv switches [workarounds]
	// report_ironic_standard_resource_class_inventory.
	legacyEnv = "CORRAL_WORKAROUNDS_REPORT_IRONIC_STANDARD_RESOURCE_CLASS_INVENTORY"
	// refusalMsg starts the node sync's warning about a refused inventory.
	refusalMsg = "Placement refused a node provider's inventory"
	image      = "http://images.example.test/ubuntu-24.04.qcow2"
	// Node properties e2e.Ironic.EnrollNodes gives every node (sim and
	// real): the legacy standard inventory, and the size of the old-style
	// bare-metal flavor, which matches its nodes exactly, as in Nova.
	nodeCPUs, nodeRAM, nodeDisk = 8, 16384, 100
)

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real agent processes")
	}
}

// cloudSpec describes a cluster: the first Hypervisors agents are of kind
// hypervisor, the others of kind ironic; every agent knows Ironic.
type cloudSpec struct {
	Hypervisors, Ironics int
	BaseIP               int
	Env                  []string // every agent
}

// startCloud starts the cluster and waits until every host is up with its
// kind and every hypervisor has reported its inventory.
func startCloud(t *testing.T, ir *e2e.Ironic, spec cloudSpec) *e2e.Cluster {
	t.Helper()
	n := spec.Hypervisors + spec.Ironics
	c := e2e.StartWith(t, n, e2e.Options{BaseIP: spec.BaseIP, ExtraArgs: []string{"--ironic-url", ir.URL},
		Env: append([]string{"CORRAL_IRONIC_SYNC_INTERVAL=1s"}, spec.Env...)},
		func(i int, a *e2e.Agent) {
			if i < spec.Hypervisors {
				a.Args = append(a.Args, "--kind", fsm.KindHypervisor)
			}
		})
	c.AwaitReady(90 * time.Second)
	for _, a := range c.Agents {
		if !a.Running() {
			t.Fatalf("agent %s exited during start-up (see its log in %s)", a.Name, c.Dir)
		}
	}
	want := map[string]string{}
	for i, a := range c.Agents {
		want[a.Name] = fsm.KindIronic
		if i < spec.Hypervisors {
			want[a.Name] = fsm.KindHypervisor
		}
	}
	testkit.Eventually(t, 60*time.Second, func() error {
		kinds, err := hostKinds(c.Agents[0])
		if err != nil {
			return err
		}
		for name, kind := range want {
			if kinds[name] != kind {
				return fmt.Errorf("host %s is %q, want an up host of kind %s", name, kinds[name], kind)
			}
		}
		for name, kind := range want {
			if kind != fsm.KindHypervisor {
				continue
			}
			if inv, err := inventories(c.Agents[0], fsm.HostProviderUUID(name)); err != nil || inv["VCPU"].Total == 0 {
				return fmt.Errorf("hypervisor %s has not reported its inventory yet: %v %v", name, inv, err)
			}
		}
		return nil
	})
	return c
}

func ctx30() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// get reads a path of the agent's API into out.
func get(a *e2e.Agent, path string, out any) error {
	ctx, cancel := ctx30()
	defer cancel()
	return a.Client().Do(ctx, http.MethodGet, path, nil, out)
}

// hostKinds maps each up host to its kind.
func hostKinds(a *e2e.Agent) (map[string]string, error) {
	var body wire.HostsResponse
	if err := get(a, "/v1/hosts", &body); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, h := range body.Hosts {
		if h.Status == wire.HostUp {
			out[h.Name] = h.Kind
		}
	}
	return out, nil
}

// nova is a client of the agent's Nova API at microversion 2.47 (the
// embedded flavor is shown).
func nova(c *e2e.Cluster, a *e2e.Agent) *client.Client {
	cl := client.New(a.URL(), c.Token)
	cl.Headers = map[string]string{"OpenStack-API-Version": "compute 2.47"}
	return cl
}

// createFlavor creates a flavor with extra specs through the Nova API and
// returns its id.
func createFlavor(t *testing.T, c *e2e.Cluster, a *e2e.Agent, name string, vcpus, ram, disk int, specs map[string]string) string {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	cl := nova(c, a)
	var out struct {
		Flavor struct {
			ID string `json:"id"`
		} `json:"flavor"`
	}
	in := map[string]any{"flavor": map[string]any{"name": name, "vcpus": vcpus, "ram": ram, "disk": disk}}
	if err := cl.Do(ctx, http.MethodPost, "/compute/v2.1/flavors", in, &out); err != nil {
		t.Fatalf("create flavor %s: %v", name, err)
	}
	if len(specs) > 0 {
		if err := cl.Do(ctx, http.MethodPost, "/compute/v2.1/flavors/"+out.Flavor.ID+"/os-extra_specs",
			map[string]any{"extra_specs": specs}, nil); err != nil {
			t.Fatalf("extra specs of flavor %s: %v", name, err)
		}
	}
	return out.Flavor.ID
}

// goldSpecs are a bare-metal flavor's extra specs as Nova documents them:
// one unit of the node's class, the standard classes zeroed.
func goldSpecs(rc string) map[string]string {
	return map[string]string{"resources:" + rc: "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
}

// boot asks for a server on the networks and returns its id.
func boot(t *testing.T, c *e2e.Cluster, a *e2e.Agent, name, flavorID string, networks ...string) string {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	var nets any = "none"
	if len(networks) > 0 {
		var list []map[string]string
		for _, n := range networks {
			list = append(list, map[string]string{"uuid": n})
		}
		nets = list
	}
	var out struct {
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
	}
	in := map[string]any{"server": map[string]any{"name": name, "flavorRef": flavorID, "imageRef": image, "networks": nets}}
	if err := nova(c, a).Do(ctx, http.MethodPost, "/compute/v2.1/servers", in, &out); err != nil {
		t.Fatalf("boot %s through %s: %v", name, a.Name, err)
	}
	return out.Server.ID
}

// serverView is the part of Nova's server view (2.47) the tests read.
type serverView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Host      string `json:"OS-EXT-SRV-ATTR:host"`
	Node      string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	TaskState string `json:"OS-EXT-STS:task_state"`
	Fault     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"fault"`
	Flavor struct {
		VCPUs        int               `json:"vcpus"`
		RAM          int               `json:"ram"`
		Disk         int               `json:"disk"`
		OriginalName string            `json:"original_name"`
		ExtraSpecs   map[string]string `json:"extra_specs"`
	} `json:"flavor"`
}

func (s serverView) fault() string {
	if s.Fault == nil {
		return ""
	}
	return s.Fault.Message
}

func getServer(c *e2e.Cluster, a *e2e.Agent, id string) (serverView, error) {
	ctx, cancel := ctx30()
	defer cancel()
	var out struct {
		Server serverView `json:"server"`
	}
	err := nova(c, a).Do(ctx, http.MethodGet, "/compute/v2.1/servers/"+id, nil, &out)
	return out.Server, err
}

// settle waits until every server left BUILD and returns them by id.
func settle(t *testing.T, c *e2e.Cluster, timeout time.Duration, ids ...string) map[string]serverView {
	t.Helper()
	out := map[string]serverView{}
	testkit.Eventually(t, timeout, func() error {
		var pending []string
		for _, id := range ids {
			if s, ok := out[id]; ok && s.Status != "BUILD" {
				continue
			}
			s, err := getServer(c, c.Agents[0], id)
			if err != nil {
				return err
			}
			out[id] = s
			if s.Status == "BUILD" {
				pending = append(pending, fmt.Sprintf("%s (%s)", s.Name, s.TaskState))
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("still building: %s", strings.Join(pending, ", "))
		}
		return nil
	})
	return out
}

// active waits for the servers and fails unless each is ACTIVE.
func active(t *testing.T, c *e2e.Cluster, timeout time.Duration, ids ...string) map[string]serverView {
	t.Helper()
	got := settle(t, c, timeout, ids...)
	for _, id := range ids {
		if s := got[id]; s.Status != "ACTIVE" {
			t.Fatalf("server %s (%s) is %s: %s", s.Name, id, s.Status, s.fault())
		}
	}
	return got
}

// deleteServers deletes the servers and waits until they are gone.
func deleteServers(t *testing.T, c *e2e.Cluster, timeout time.Duration, ids ...string) {
	t.Helper()
	for _, id := range ids {
		ctx, cancel := ctx30()
		err := nova(c, c.Agents[0]).Do(ctx, http.MethodDelete, "/compute/v2.1/servers/"+id, nil, nil)
		cancel()
		if err != nil {
			t.Fatalf("delete server %s: %v", id, err)
		}
	}
	testkit.Eventually(t, timeout, func() error {
		for _, id := range ids {
			s, err := getServer(c, c.Agents[0], id)
			switch {
			case client.IsStatus(err, http.StatusNotFound):
				continue
			case err != nil:
				return err
			}
			return fmt.Errorf("server %s is still %s (%s)", id, s.Status, s.TaskState)
		}
		return nil
	})
}

// allocations reads Placement's allocations of a consumer: provider →
// class → amount.
func allocations(a *e2e.Agent, consumer string) (map[string]map[string]int64, error) {
	var body struct {
		Allocations map[string]struct {
			Resources map[string]int64 `json:"resources"`
		} `json:"allocations"`
	}
	if err := get(a, "/placement/allocations/"+consumer, &body); err != nil {
		return nil, err
	}
	out := map[string]map[string]int64{}
	for rp, r := range body.Allocations {
		out[rp] = r.Resources
	}
	return out, nil
}

func inventories(a *e2e.Agent, provider string) (map[string]placement.Inventory, error) {
	var body struct {
		Inventories map[string]placement.Inventory `json:"inventories"`
	}
	err := get(a, "/placement/resource_providers/"+provider+"/inventories", &body)
	return body.Inventories, err
}

func usages(a *e2e.Agent, provider string) (map[string]int64, error) {
	var body struct {
		Usages map[string]int64 `json:"usages"`
	}
	err := get(a, "/placement/resource_providers/"+provider+"/usages", &body)
	return body.Usages, err
}

// classes lists the resource classes of an inventory, sorted.
func classes(inv map[string]placement.Inventory) []string {
	var out []string
	for rc := range inv {
		out = append(out, rc)
	}
	slices.Sort(out)
	return out
}

// nodes reads the node mirror by uuid.
func nodes(a *e2e.Agent) (map[string]wire.NodeView, error) {
	var body struct {
		Nodes []wire.NodeView `json:"nodes"`
	}
	if err := get(a, "/v1/nodes", &body); err != nil {
		return nil, err
	}
	out := map[string]wire.NodeView{}
	for _, n := range body.Nodes {
		out[n.UUID] = n
	}
	return out, nil
}

// rawRequest sends a request without the client's error decoding and
// returns the status and body.
func rawRequest(c *e2e.Cluster, a *e2e.Agent, method, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := ctx30()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.URL()+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// rollingRestart restarts every agent, one at a time, with the extra
// environment, waiting for the cluster to be ready after each. The leader
// goes last, so that leadership passes once, from the old configuration
// to the new one; it reports whether it did (no election while the
// followers restarted).
func rollingRestart(t *testing.T, c *e2e.Cluster, env ...string) bool {
	t.Helper()
	leader := c.Leader(30 * time.Second)
	order := slices.DeleteFunc(slices.Clone(c.Agents), func(a *e2e.Agent) bool { return a == leader })
	once := true
	for _, a := range append(order, leader) {
		a.Stop(20 * time.Second)
		a.Env = append(a.Env, env...) // the last value of a key wins
		a.Start()
		c.AwaitReady(60 * time.Second)
		if now := c.Leader(30 * time.Second); a != leader && now != leader {
			t.Logf("leadership moved from %s to %s while %s restarted", leader.Name, now.Name, a.Name)
			once = false
		}
	}
	return once
}

// logLines counts the lines of every agent's log that contain all the
// parts.
func logLines(t *testing.T, c *e2e.Cluster, parts ...string) int {
	t.Helper()
	n := 0
	for _, a := range c.Agents {
		f, err := os.Open(filepath.Join(c.Dir, a.Name+".log"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
	line:
		for sc.Scan() {
			for _, p := range parts {
				if !strings.Contains(sc.Text(), p) {
					continue line
				}
			}
			n++
		}
		f.Close()
	}
	return n
}

// syncCount reads how many node syncs the agent ran as leader.
func syncCount(a *e2e.Agent) (int, error) {
	resp, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "corral_node_sync_duration_seconds_count "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, sc.Err()
}

// awaitSyncs waits until the leader has run n more node syncs.
func awaitSyncs(t *testing.T, c *e2e.Cluster, n int) {
	t.Helper()
	leader := c.Leader(30 * time.Second)
	start, err := syncCount(leader)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() error {
		cur, err := syncCount(leader)
		if err != nil {
			return err
		}
		if cur < start+n {
			return fmt.Errorf("%s ran %d node syncs, waiting for %d", leader.Name, cur-start, n)
		}
		return nil
	})
}

// migrate runs `corral manage ironic-flavor-migration` against the agent
// and returns its exit code and output.
func migrate(t *testing.T, c *e2e.Cluster, a *e2e.Agent, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"manage", "ironic-flavor-migration"}, args...)
	args = append(args, "--addr", a.URL(), "--token", c.Token)
	cmd := exec.CommandContext(ctx, e2e.Binary(t), args...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("corral %s: %v\n%s", strings.Join(args, " "), err, out)
	return -1, ""
}
