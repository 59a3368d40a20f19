package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// TestServersRealIronic builds and deletes servers through three real
// agents and a real Ironic, once with Ironic's allocations and once with
// the deprecated instance_uuid reservation, and checks what Ironic holds
// at every step.
func TestServersRealIronic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ir := RealIronic(t)
	t.Run("allocations", func(t *testing.T) {
		t.Parallel()
		testServersWithAllocations(t, ir)
	})
	t.Run("instance_uuid", func(t *testing.T) {
		t.Parallel()
		testServersWithInstanceUUID(t, ir)
	})
}

func testServersWithAllocations(t *testing.T, ir *Ironic) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	class := ir.Class("gold")
	nodeIDs := ir.EnrollNodes(t, 8, class)
	c := IronicCluster(t, 3, ir)
	AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := BareMetalFlavor(t, c.Agents[1], "bm-gold", class)

	// Six boots, one after the other, through each agent in turn.
	var ids []string
	for i := range 6 {
		id, err := Boot(ctx, Compute(c.Agents[i%3]), fmt.Sprintf("gold-%d", i), flavor)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cl := Compute(c.Agents[0])
	got := WaitServers(t, cl, ids, 90*time.Second, Settled)
	perHost := map[string]int{}
	onNode := map[string]string{}
	for _, id := range ids {
		s := got[id]
		if s.Status != "ACTIVE" {
			t.Fatalf("server %s is %s: %+v", id, s.Status, s.Fault)
		}
		perHost[s.Host]++
		if other, dup := onNode[s.HypervisorHostname]; dup {
			t.Fatalf("servers %s and %s both on node %s", other, id, s.HypervisorHostname)
		}
		onNode[s.HypervisorHostname] = id
		if !slices.Contains(nodeIDs, s.HypervisorHostname) {
			t.Fatalf("server %s on %q, not one of the enrolled nodes", id, s.HypervisorHostname)
		}
		if specs, _ := s.Flavor["extra_specs"].(map[string]any); s.Flavor["original_name"] != "bm-gold" ||
			specs["resources:"+fsm.NormalizeResourceClass(class)] != "1" {
			t.Errorf("server %s embeds flavor %v", id, s.Flavor)
		}
		checkAllocated(ctx, t, ir, s)
	}
	for _, a := range c.Agents {
		if perHost[a.Name] != 2 {
			t.Fatalf("servers per host %v, want 2 on each", perHost)
		}
	}
	hosts, err := Hosts(ctx, c.Agents[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts.Hosts {
		if h.Servers != 2 {
			t.Errorf("GET /v1/hosts: %s owns %d servers, want 2", h.Name, h.Servers)
		}
	}
	checkCapacity(t, hosts.Capacity, class, 8, 6)
	checkReservations(ctx, t, c.Agents[1], onNode)

	// Delete three, each through another agent.
	deleted, kept := ids[:3], ids[3:]
	for i, id := range deleted {
		if err := servers.Delete(ctx, Compute(c.Agents[(i+1)%3]), id).ExtractErr(); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	WaitGone(t, cl, deleted, 60*time.Second)
	for _, id := range deleted {
		checkReleased(ctx, t, ir, got[id].HypervisorHostname, id)
		delete(onNode, got[id].HypervisorHostname)
	}
	for _, s := range WaitServers(t, cl, kept, 10*time.Second, Settled) {
		if s.Status != "ACTIVE" {
			t.Errorf("kept server %s is %s", s.ID, s.Status)
		}
		checkAllocated(ctx, t, ir, s)
	}
	checkReservations(ctx, t, c.Agents[2], onNode)

	// A flavor whose class no node has, and one asking for a trait no node
	// has, end in ERROR with a fault naming what is missing.
	none := ir.Class("platinum")
	noClass := BareMetalFlavor(t, c.Agents[0], "bm-platinum", none)
	noTrait := BareMetalFlavor(t, c.Agents[0], "bm-gold-gpu", class)
	AddExtraSpecs(t, c.Agents[0], noTrait, map[string]string{"trait:CUSTOM_E2E_NO_SUCH_GPU": "required"})
	wantFault := map[string][]string{}
	for i, f := range []struct{ flavor, name, want string }{
		{noClass, "platinum-0", fsm.NormalizeResourceClass(none)},
		{noTrait, "gold-gpu-0", "CUSTOM_E2E_NO_SUCH_GPU"},
	} {
		id, err := Boot(ctx, Compute(c.Agents[i%3]), f.name, f.flavor)
		if err != nil {
			t.Fatal(err)
		}
		wantFault[id] = []string{"No valid host", f.want}
	}
	for id, s := range WaitServers(t, cl, slices.Collect(maps.Keys(wantFault)), 30*time.Second, Settled) {
		msg, err := FaultOf(s)
		if s.Status != "ERROR" || err != nil {
			t.Fatalf("server %s: %s, fault %q, %v; want ERROR", s.Name, s.Status, msg, err)
		}
		t.Logf("server %s: ERROR %q", s.Name, msg)
		for _, want := range wantFault[id] {
			if !strings.Contains(msg, want) {
				t.Errorf("server %s: fault %q does not name %q", s.Name, msg, want)
			}
		}
		if a, err := ir.Allocation(ctx, id); err != nil || a != nil {
			t.Errorf("Ironic holds allocation %+v, %v for failed server %s", a, err, s.Name)
		}
	}
	checkReservations(ctx, t, c.Agents[0], onNode)
}

func testServersWithInstanceUUID(t *testing.T, ir *Ironic) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	class := ir.Class("silver")
	nodeIDs := ir.EnrollNodes(t, 4, class)
	c := IronicCluster(t, 3, ir, "CORRAL_IRONIC_RESERVATION=instance_uuid")
	AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-silver", class)
	var ids []string
	for i := range 3 {
		id, err := Boot(ctx, Compute(c.Agents[i]), fmt.Sprintf("silver-%d", i), flavor)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cl := Compute(c.Agents[1])
	got := WaitServers(t, cl, ids, 90*time.Second, Settled)
	onNode := map[string]string{}
	for _, id := range ids {
		s := got[id]
		if s.Status != "ACTIVE" {
			t.Fatalf("server %s is %s: %+v", id, s.Status, s.Fault)
		}
		n, err := ir.Node(ctx, s.HypervisorHostname)
		if err != nil {
			t.Fatalf("node of %s: %v", id, err)
		}
		if n.InstanceUUID != id || n.AllocationUUID != "" || n.ProvisionState != "active" {
			t.Errorf("node %s for server %s: instance_uuid %q allocation %q state %s", n.UUID, id,
				n.InstanceUUID, n.AllocationUUID, n.ProvisionState)
		}
		if _, dup := onNode[n.UUID]; dup {
			t.Fatalf("two servers on node %s", n.UUID)
		}
		onNode[n.UUID] = id
	}
	allocs, err := ir.Allocations(ctx, class)
	if err != nil || len(allocs) != 0 {
		t.Fatalf("instance_uuid reservation created allocations: %+v, %v", allocs, err)
	}
	checkReservations(ctx, t, c.Agents[2], onNode)

	for i, id := range ids {
		if err := servers.Delete(ctx, Compute(c.Agents[(i+2)%3]), id).ExtractErr(); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	WaitGone(t, cl, ids, 60*time.Second)
	for _, id := range ids {
		checkReleased(ctx, t, ir, got[id].HypervisorHostname, id)
	}
	checkReservations(ctx, t, c.Agents[0], map[string]string{})
}

// checkAllocated asserts that Ironic's allocation named by the server id
// holds the server's node and that the node is deployed for it.
func checkAllocated(ctx context.Context, t *testing.T, ir *Ironic, s *servers.Server) {
	t.Helper()
	a, err := ir.Allocation(ctx, s.ID)
	if err != nil || a == nil {
		t.Fatalf("allocation %s in Ironic: %+v, %v", s.ID, a, err)
	}
	if a.State != "active" || a.NodeUUID != s.HypervisorHostname {
		t.Errorf("allocation %s: state %s on node %s, server on %s", s.ID, a.State, a.NodeUUID, s.HypervisorHostname)
	}
	n, err := ir.Node(ctx, s.HypervisorHostname)
	if err != nil {
		t.Fatalf("node of %s: %v", s.ID, err)
	}
	if n.InstanceUUID != s.ID || n.AllocationUUID != a.UUID || n.ProvisionState != "active" {
		t.Errorf("node %s for server %s: instance_uuid %q allocation %q state %s", n.UUID, s.ID,
			n.InstanceUUID, n.AllocationUUID, n.ProvisionState)
	}
}

// checkReleased asserts that Ironic holds nothing for a deleted server.
func checkReleased(ctx context.Context, t *testing.T, ir *Ironic, nodeID, serverID string) {
	t.Helper()
	n, err := ir.Node(ctx, nodeID)
	if err != nil {
		t.Fatalf("node %s: %v", nodeID, err)
	}
	if n.ProvisionState != "available" || n.InstanceUUID != "" || n.AllocationUUID != "" {
		t.Errorf("node %s after deleting server %s: state %s/%s instance_uuid %q allocation %q", nodeID, serverID,
			n.ProvisionState, n.TargetProvisionState, n.InstanceUUID, n.AllocationUUID)
	}
	if a, err := ir.Allocation(ctx, serverID); err != nil || a != nil {
		t.Errorf("allocation of deleted server %s: %+v, %v", serverID, a, err)
	}
}

// checkReservations asserts that corral's committed reservations are
// exactly want (node → server).
func checkReservations(ctx context.Context, t *testing.T, a *Agent, want map[string]string) {
	t.Helper()
	rs, err := Reservations(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, r := range rs {
		if _, dup := have[r.NodeUUID]; dup {
			t.Fatalf("node %s reserved twice: %+v", r.NodeUUID, rs)
		}
		have[r.NodeUUID] = r.ServerID
	}
	if len(have) != len(want) {
		t.Fatalf("reservations %v, want %v", have, want)
	}
	for node, srv := range want {
		if have[node] != srv {
			t.Fatalf("reservations %v, want %v", have, want)
		}
	}
}

// checkCapacity asserts the cluster-wide capacity of one Ironic class.
func checkCapacity(t *testing.T, caps []wire.Capacity, class string, total, used int) {
	t.Helper()
	for _, c := range caps {
		if c.IronicClass == class {
			if c.Total != total || c.Used != used || c.Free != total-used {
				t.Errorf("capacity of %s: %+v, want total %d used %d", class, c, total, used)
			}
			return
		}
	}
	t.Errorf("no capacity reported for %s: %+v", class, caps)
}

// TestServerBadInput checks that the servers API refuses bad requests
// with Nova's status codes and a message, through leader and followers.
func TestServerBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	c := Start(t, 3, Options{})
	c.AwaitReady(60 * time.Second)
	flavor := BareMetalFlavor(t, c.Agents[0], "bm-any", "baremetal-any")
	missing := "3f0c1d9e-0000-4000-8000-000000000000"
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"unknown flavor", http.MethodPost, "/servers",
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "no-such-flavor"}}`, 400, "no-such-flavor"},
		{"no image", http.MethodPost, "/servers",
			`{"server": {"name": "a", "flavorRef": "` + flavor + `"}}`, 400, "imageRef"},
		{"no flavor", http.MethodPost, "/servers", `{"server": {"name": "a", "imageRef": "img"}}`, 400, "flavorRef"},
		{"no name", http.MethodPost, "/servers",
			`{"server": {"imageRef": "img", "flavorRef": "` + flavor + `"}}`, 400, "name"},
		{"malformed JSON", http.MethodPost, "/servers", `{"server": {"name": "a",`, 400, "malformed JSON"},
		{"trailing garbage", http.MethodPost, "/servers",
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "` + flavor + `"}}}`, 400, "malformed JSON"},
		{"unknown field", http.MethodPost, "/servers",
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "` + flavor + `", "colour": "red"}}`, 400, "colour"},
		{"not a server", http.MethodPost, "/servers", `{"flavor": {}}`, 400, ""},
		{"empty body", http.MethodPost, "/servers", ``, 400, "empty"},
		{"bad networks", http.MethodPost, "/servers",
			`{"server": {"name": "a", "imageRef": "img", "flavorRef": "` + flavor + `", "networks": "some"}}`, 400, "networks"},
		{"delete missing", http.MethodDelete, "/servers/" + missing, "", 404, "Instance " + missing + " could not be found"},
		{"get missing", http.MethodGet, "/servers/" + missing, "", 404, "could not be found"},
	}
	for i, tc := range cases {
		a := c.Agents[i%3]
		status, key, msg := novaRaw(t, a, tc.method, tc.path, tc.body)
		if status != tc.status || msg == "" || !strings.Contains(msg, tc.want) {
			t.Errorf("%s through %s: %d %q, want %d with %q", tc.name, a.Name, status, msg, tc.status, tc.want)
		}
		if wantKey := map[int]string{400: "badRequest", 404: "itemNotFound"}[tc.status]; key != wantKey {
			t.Errorf("%s: error key %q, want %q", tc.name, key, wantKey)
		}
	}
	// Nothing was created.
	var list struct {
		Servers []map[string]any `json:"servers"`
	}
	if err := c.Agents[1].Client().Do(context.Background(), http.MethodGet, "/compute/v2.1/servers?consistency=linearizable", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Servers) != 0 {
		t.Errorf("bad requests created servers: %v", list.Servers)
	}
}

// novaRaw sends a raw request to the agent's compute API and returns the
// status with the key and message of Nova's error body.
func novaRaw(t *testing.T, a *Agent, method, path, body string) (status int, key, msg string) {
	t.Helper()
	req, err := http.NewRequest(method, a.URL()+"/compute/v2.1"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", a.c.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var fault map[string]struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &fault); err != nil || len(fault) != 1 {
		return resp.StatusCode, "", string(raw)
	}
	for k, v := range fault {
		key, msg = k, v.Message
		if v.Code != resp.StatusCode {
			t.Errorf("%s %s: body code %d, status %d", method, path, v.Code, resp.StatusCode)
		}
	}
	return resp.StatusCode, key, msg
}
