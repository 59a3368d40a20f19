package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

type client struct {
	t    *testing.T
	base string
}

func start(t *testing.T, opts sim.Options) (*sim.Server, *client) {
	t.Helper()
	s := sim.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, &client{t: t, base: ts.URL}
}

// do sends a request at microversion 1.82 (or v if not empty) and decodes the JSON answer.
func (c *client) do(method, path string, body any, v ...string) (int, map[string]any, http.Header) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	version := "1.82"
	if len(v) > 0 {
		version = v[0]
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("%s %s: %q: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, m, resp.Header
}

func fault(m map[string]any) string {
	s, _ := m["error_message"].(string)
	var inner map[string]any
	if json.Unmarshal([]byte(s), &inner) != nil {
		return s
	}
	if f, ok := inner["faultstring"].(string); ok {
		return f
	}
	d, _ := inner["description"].(string)
	return d
}

// waitFor polls cond every 10 ms for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, testkit.Holds(what, cond))
}

func (c *client) allocate(body map[string]any) map[string]any {
	c.t.Helper()
	code, m, _ := c.do(http.MethodPost, "/v1/allocations", body)
	if code != http.StatusCreated {
		c.t.Fatalf("POST allocation: %d %v", code, m)
	}
	id := m["uuid"].(string)
	var got map[string]any
	waitFor(c.t, "allocation "+id, func() bool {
		_, got, _ = c.do(http.MethodGet, "/v1/allocations/"+id, nil)
		return got["state"] != "allocating"
	})
	return got
}

func TestMaxVersionHidesAllocations(t *testing.T) {
	_, c := start(t, sim.Options{MaxVersion: "1.46"})
	code, m, h := c.do(http.MethodPost, "/v1/allocations", map[string]any{"resource_class": "x"}, "latest")
	if code != http.StatusMethodNotAllowed || fault(m) != "The API version does not allow allocations" {
		t.Fatalf("POST at latest=1.46: %d %v", code, m)
	}
	if h.Get("X-OpenStack-Ironic-API-Version") != "" {
		t.Fatalf("version header on a version-refused answer: %v", h)
	}
	code, _, h = c.do(http.MethodGet, "/v1/nodes", nil, "latest")
	if code != http.StatusOK || h.Get("X-OpenStack-Ironic-API-Version") != "1.46" ||
		h.Get("X-OpenStack-Ironic-API-Maximum-Version") != "1.46" {
		t.Fatalf("latest: %d %v", code, h)
	}
	code, m, _ = c.do(http.MethodGet, "/v1/nodes", nil, "1.52")
	if code != http.StatusNotAcceptable || !strings.HasSuffix(fault(m), "The supported version range is: [1.1, 1.46].") {
		t.Fatalf("1.52 on a 1.46 server: %d %v", code, m)
	}
}

func TestSeedAndConcurrentAllocationsNeverDoubleBook(t *testing.T) {
	s, c := start(t, sim.Options{AllocationDelay: time.Millisecond})
	ids := s.SeedNodes(20, "bm-gold", "CUSTOM_GPU")
	if len(ids) != 20 {
		t.Fatalf("seeded %d", len(ids))
	}
	var wg sync.WaitGroup
	results := make([]map[string]any, 30)
	for i := range results {
		wg.Go(func() {
			results[i] = c.allocate(map[string]any{"name": fmt.Sprintf("a-%d", i), "resource_class": "bm-gold",
				"traits": []string{"CUSTOM_GPU"}})
		})
	}
	wg.Wait()
	used := map[string]string{}
	var active, failed int
	for _, a := range results {
		switch a["state"] {
		case "active":
			active++
			n := a["node_uuid"].(string)
			if prev, dup := used[n]; dup {
				t.Fatalf("node %s given to %s and %s", n, prev, a["uuid"])
			}
			used[n] = a["uuid"].(string)
		case "error":
			failed++
		}
	}
	if active != 20 || failed != 10 {
		t.Fatalf("%d active, %d failed", active, failed)
	}
	for _, n := range s.Nodes() {
		if n.InstanceUUID == "" || n.InstanceUUID != n.AllocationUUID || used[n.UUID] != n.InstanceUUID {
			t.Fatalf("node %+v", n)
		}
	}
}

func TestTransitionsAreAsynchronousWithDelays(t *testing.T) {
	s, c := start(t, sim.Options{DeployDelay: 200 * time.Millisecond, UndeployDelay: 100 * time.Millisecond,
		LockWait: 50 * time.Millisecond})
	id := s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc", MACs: []string{"52:54:00:00:00:AA"}}})[0]
	if code, _, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/provision", map[string]any{"target": "active"}); code != 202 {
		t.Fatalf("deploy: %d", code)
	}
	_, m, _ := c.do(http.MethodGet, "/v1/nodes/"+id, nil)
	if m["provision_state"] != "deploying" || m["target_provision_state"] != "active" || m["reservation"] == nil {
		t.Fatalf("during deploy: %v %v %v", m["provision_state"], m["target_provision_state"], m["reservation"])
	}
	code, m, _ := c.do(http.MethodPatch, "/v1/nodes/n1", []any{map[string]any{"op": "add", "path": "/extra/a", "value": 1}})
	if code != http.StatusConflict || fault(m) != "Node n1 can not be updated while a state transition is in progress." {
		t.Fatalf("patch during deploy: %d %v", code, m)
	}
	code, m, _ = c.do(http.MethodPut, "/v1/nodes/n1/states/power", map[string]any{"target": "power on"})
	if code != http.StatusConflict || !strings.Contains(fault(m), "is locked by host ironic-sim") {
		t.Fatalf("power during deploy: %d %v", code, m)
	}
	waitFor(t, "active", func() bool { return s.Nodes()[0].ProvisionState == "active" })
	_, m, _ = c.do(http.MethodGet, "/v1/ports?node=n1", nil)
	if p := m["ports"].([]any); len(p) != 1 || p[0].(map[string]any)["address"] != "52:54:00:00:00:aa" {
		t.Fatalf("seeded ports: %v", m)
	}
}

func TestDeployPowersOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		s, c := start(t, sim.Options{DeployPowersOn: on})
		s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}})
		want := "power off" // the fake deploy interface's: the power stays as it was
		if on {
			want = "power on"
		}
		for _, target := range []string{"active", "rebuild"} {
			if target == "rebuild" {
				if code, _, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/power", map[string]any{"target": "power off"}); code != 202 {
					t.Fatalf("power off: %d", code)
				}
				waitFor(t, "off", func() bool { return s.Nodes()[0].PowerState == "power off" })
			}
			if code, _, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/provision", map[string]any{"target": target}); code != 202 {
				t.Fatalf("%s: %d", target, code)
			}
			waitFor(t, "active", func() bool { return s.Nodes()[0].ProvisionState == "active" })
			if got := s.Nodes()[0].PowerState; got != want {
				t.Errorf("DeployPowersOn %t: after %s the node is %q, want %q", on, target, got, want)
			}
		}
	}
}

func TestRequireImageSource(t *testing.T) {
	s, c := start(t, sim.Options{RequireImageSource: true})
	s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}})
	code, m, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/provision", map[string]any{"target": "active"})
	if code != http.StatusBadRequest || !strings.Contains(fault(m), "Missing are: ['image_source']") {
		t.Fatalf("deploy without image: %d %v", code, m)
	}
}

func TestFaultInjectionAndCounters(t *testing.T) {
	s, c := start(t, sim.Options{})
	s.FailNext(http.MethodGet, "/v1/nodes", http.StatusServiceUnavailable, 2)
	for i := range 3 {
		code, m, h := c.do(http.MethodGet, "/v1/nodes", nil)
		want := http.StatusServiceUnavailable
		if i == 2 {
			want = http.StatusOK
		}
		if code != want {
			t.Fatalf("request %d: %d %v", i, code, m)
		}
		if code == want && i < 2 && (fault(m) == "" || h.Get("X-OpenStack-Ironic-API-Maximum-Version") == "") {
			t.Fatalf("injected fault body %v headers %v", m, h)
		}
	}
	c.do(http.MethodGet, "/v1/allocations", nil)
	if n := s.Requests(http.MethodGet, "/v1/nodes"); n != 3 {
		t.Fatalf("Requests(GET, /v1/nodes) = %d", n)
	}
	if n := s.Requests("", "/v1/"); n != 4 {
		t.Fatalf("Requests(, /v1/) = %d", n)
	}

	s2, c2 := start(t, sim.Options{FaultRate: 0.5, FaultSeed: 7, FaultStatus: http.StatusInternalServerError})
	var failed int
	for range 100 {
		if code, _, _ := c2.do(http.MethodGet, "/v1/nodes", nil); code == http.StatusInternalServerError {
			failed++
		}
	}
	if failed < 30 || failed > 70 || s2.Requests("GET", "/v1/nodes") != 100 {
		t.Fatalf("FaultRate 0.5: %d of 100 failed", failed)
	}
}

func TestLatency(t *testing.T) {
	_, c := start(t, sim.Options{Latency: 50 * time.Millisecond})
	t0 := time.Now()
	c.do(http.MethodGet, "/", nil)
	if d := time.Since(t0); d < 50*time.Millisecond {
		t.Fatalf("request took %v", d)
	}
}

func TestCloseStopsPendingTransitions(t *testing.T) {
	s := sim.New(sim.Options{DeployDelay: time.Hour})
	ts := httptest.NewServer(s)
	defer ts.Close()
	s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}})
	c := &client{t: t, base: ts.URL}
	c.do(http.MethodPut, "/v1/nodes/n1/states/provision", map[string]any{"target": "active"})
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a pending transition")
	}
	if st := s.Nodes()[0].ProvisionState; st != "deploying" {
		t.Fatalf("state after Close = %s", st)
	}
}

// A held deploy stays deploying, its node locked, past DeployDelay and
// ends when released; the next one ends after the delay again.
func TestHoldDeploys(t *testing.T) {
	s, c := start(t, sim.Options{DeployDelay: time.Millisecond, LockWait: 300 * time.Millisecond})
	s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc"}, {Name: "n2", ResourceClass: "rc"}})
	s.HoldDeploys()
	if code, m, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/provision", map[string]any{"target": "active"}); code != http.StatusAccepted {
		t.Fatalf("deploy: %d %v", code, m)
	}
	// A request that waits for the node's lock waits it out: the deploy
	// still holds the node long after its 1 ms.
	code, m, _ := c.do(http.MethodPut, "/v1/nodes/n1/states/power", map[string]any{"target": "power on"})
	if code != http.StatusConflict || !strings.Contains(fault(m), "locked") {
		t.Fatalf("power on a node whose deploy is held: %d %v, want 409 locked", code, m)
	}
	if st := s.Nodes()[0]; st.ProvisionState != "deploying" {
		t.Fatalf("held deploy is %s", st.ProvisionState)
	}
	s.ReleaseDeploys()
	c.do(http.MethodPut, "/v1/nodes/n2/states/provision", map[string]any{"target": "active"})
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, st := range s.Nodes() {
			if st.ProvisionState != "active" {
				return fmt.Errorf("after the release node %s is %s", st.Name, st.ProvisionState)
			}
		}
		return nil
	})
}

func TestBackfillAndVIFRecording(t *testing.T) {
	s, c := start(t, sim.Options{})
	id := s.Seed([]sim.NodeSpec{{Name: "n1", ResourceClass: "rc", ProvisionState: "active"}})[0]
	inst := "11111111-2222-3333-4444-555555555555"
	code, m, _ := c.do(http.MethodPatch, "/v1/nodes/n1", []any{map[string]any{"op": "add", "path": "/instance_uuid", "value": inst}})
	if code != 200 {
		t.Fatalf("patch: %d %v", code, m)
	}
	code, m, _ = c.do(http.MethodPost, "/v1/allocations", map[string]any{"node": "n1", "name": "bf"})
	if code != http.StatusCreated || m["uuid"] != inst || m["state"] != "active" || m["node_uuid"] != id {
		t.Fatalf("backfill: %d %v", code, m)
	}
	code, m, _ = c.do(http.MethodPost, "/v1/allocations", map[string]any{"node": "n1", "name": "bf2"})
	if code != http.StatusConflict || fault(m) != "An allocation with UUID "+inst+" already exists." {
		t.Fatalf("second backfill: %d %v", code, m)
	}
	c.do(http.MethodPost, "/v1/nodes/n1/vifs", map[string]any{"id": "vif-1"})
	if _, m, _ = c.do(http.MethodGet, "/v1/nodes/n1/vifs", nil); len(m["vifs"].([]any)) != 0 {
		t.Fatalf("vifs listed: %v", m)
	}
	if v := s.Nodes()[0].VIFs; len(v) != 1 || v[0] != "vif-1" {
		t.Fatalf("recorded vifs %v", v)
	}
}

// SeedWiredNodes enrolls nodes of a network interface with physical
// ports of distinct MACs: each VIF takes a free port, one beyond them is
// refused, as Ironic's flat interface does.
func TestSeedWiredNodes(t *testing.T) {
	s, c := start(t, sim.Options{NetworkInterfaces: []string{"noop", "flat"}})
	ids := s.SeedWiredNodes(3, "baremetal", "flat", 2)
	if len(ids) != 3 {
		t.Fatalf("seeded %d nodes", len(ids))
	}
	_, m, _ := c.do(http.MethodGet, "/v1/ports?detail=true", nil)
	macs := map[string]bool{}
	perNode := map[string]int{}
	for _, p := range m["ports"].([]any) {
		p := p.(map[string]any)
		macs[p["address"].(string)] = true
		perNode[p["node_uuid"].(string)]++
	}
	if len(macs) != 6 {
		t.Fatalf("%d distinct MACs, want 6: %v", len(macs), macs)
	}
	for _, id := range ids {
		if perNode[id] != 2 {
			t.Fatalf("node %s has %d ports, want 2", id, perNode[id])
		}
		_, n, _ := c.do(http.MethodGet, "/v1/nodes/"+id, nil)
		if n["network_interface"] != "flat" || n["resource_class"] != "baremetal" || n["provision_state"] != "available" {
			t.Fatalf("node %s: %v", id, n)
		}
	}
	for _, vif := range []string{"vif-1", "vif-2"} {
		if code, m, _ := c.do(http.MethodPost, "/v1/nodes/"+ids[0]+"/vifs", map[string]any{"id": vif}); code != http.StatusNoContent {
			t.Fatalf("attach %s: %d %v", vif, code, m)
		}
	}
	if code, m, _ := c.do(http.MethodPost, "/v1/nodes/"+ids[0]+"/vifs", map[string]any{"id": "vif-3"}); code != http.StatusBadRequest {
		t.Fatalf("a third VIF on two ports: %d %v", code, m)
	}
	// Another batch gets other MACs.
	s.SeedWiredNodes(1, "baremetal", "flat", 2)
	if _, m, _ = c.do(http.MethodGet, "/v1/ports", nil); len(m["ports"].([]any)) != 8 {
		t.Fatalf("after a second batch: %v", m)
	}
}

// SeedWiredNodesAs gives the first nodes the UUIDs asked for (as Ironic
// keeps them, lower-case), the rest random ones, each node its own ports.
func TestSeedWiredNodesAs(t *testing.T) {
	s, c := start(t, sim.Options{NetworkInterfaces: []string{"noop", "flat"}})
	want := []string{"6FAE68DA-108B-4A9D-87C4-0000000000A1", "6fae68da-108b-4a9d-87c4-0000000000a2"}
	ids := s.SeedWiredNodesAs(want, 3, "baremetal", "flat", 1)
	if len(ids) != 3 || ids[0] != strings.ToLower(want[0]) || ids[1] != want[1] || ids[2] == "" || slices.Contains(want, ids[2]) {
		t.Fatalf("seeded %v, want %v then a random one", ids, want)
	}
	for _, id := range ids {
		_, n, _ := c.do(http.MethodGet, "/v1/nodes/"+id, nil)
		if n["uuid"] != id || n["network_interface"] != "flat" {
			t.Fatalf("node %s: %v", id, n)
		}
	}
	if _, m, _ := c.do(http.MethodGet, "/v1/ports", nil); len(m["ports"].([]any)) != 3 {
		t.Fatalf("ports %v, want one per node", m)
	}
}
