package ironic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/ironic/contract"
	"github.com/corral-dev/corral/ironic/sim"
)

// pvNode is a node a suite case enrolls: available, powered off, with the properties
// cpus=8, memory_mb=16384, local_gb=100, capabilities="boot_mode:uefi".
type pvNode struct {
	Name, ResourceClass string
	Traits              []string
}

// pvSeed enrolls nodes for a case, removes them when the case ends, and returns their UUIDs.
type pvSeed func(t *testing.T, specs ...pvNode) []string

var pvProperties = map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100, "capabilities": "boot_mode:uefi"}

func TestClientSuiteSim(t *testing.T) {
	s := sim.New(sim.Options{DeployDelay: 300 * time.Millisecond, UndeployDelay: 100 * time.Millisecond})
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	runClientSuite(t, ts.URL, pvSimSeed(s), false)
}

func TestClientSuiteReal(t *testing.T) {
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL not set: export IRONIC_URL=$(scripts/ironic-up.sh)")
	}
	env, err := contract.NewEnv(u, true)
	if err != nil {
		t.Fatal(err)
	}
	seed := func(t *testing.T, specs ...pvNode) []string {
		t.Helper()
		cs := make([]contract.NodeSpec, len(specs))
		var rcs []string
		for i, sp := range specs {
			cs[i] = contract.NodeSpec{Name: sp.Name, ResourceClass: sp.ResourceClass, Traits: sp.Traits}
			rcs = append(rcs, sp.ResourceClass)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ids, err := env.Enroll(ctx, cs...)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			env.Cleanup(ctx, slices.Compact(slices.Sorted(slices.Values(rcs))), ids)
		})
		if err != nil {
			t.Fatalf("enroll: %v", err)
		}
		return ids
	}
	runClientSuite(t, u, seed, true)
}

// pvSimSeed seeds nodes directly into a simulator.
func pvSimSeed(s *sim.Server) pvSeed {
	return func(t *testing.T, specs ...pvNode) []string {
		t.Helper()
		ss := make([]sim.NodeSpec, len(specs))
		for i, sp := range specs {
			ss[i] = sim.NodeSpec{Name: sp.Name, ResourceClass: sp.ResourceClass, Traits: sp.Traits, Properties: pvProperties}
		}
		return s.Seed(ss)
	}
}

// pvPrefix returns a run-unique prefix for names and resource classes.
func pvPrefix(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pv" + hex.EncodeToString(b)
}

func pvClient(t *testing.T, url string, opts Options) *Client {
	t.Helper()
	opts.URL = url
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", url, err)
	}
	return c
}

func pvCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func pvNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func pvWantErr(t *testing.T, err, sentinel error, faultPart string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("want %v, got %v", sentinel, err)
	}
	if faultPart != "" && !strings.Contains(err.Error(), faultPart) {
		t.Fatalf("error %q lacks %q", err, faultPart)
	}
}

// runClientSuite runs the Client against the Ironic at url; cases run in parallel and
// isolate themselves by node name and resource class.
func runClientSuite(t *testing.T, url string, seed pvSeed, real bool) {
	start := time.Now()
	prefix := pvPrefix(t)
	timeout := 10 * time.Second
	if real {
		timeout = 60 * time.Second
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context)
	}{
		{"Nodes", pvTestNodes},
		{"AllocationIdempotent", pvTestAllocationIdempotent},
		{"AllocationError", pvTestAllocationError},
		{"DeployLifecycle", pvTestDeployLifecycle},
		{"Witnesses", pvTestWitnesses},
		{"ReserveRelease", pvTestReserveRelease},
		{"VIFs", pvTestVIFs},
		{"Errors", pvTestErrors},
	}
	t.Run("group", func(t *testing.T) {
		t.Run("Negotiation", func(t *testing.T) {
			t.Parallel()
			c := pvClient(t, url, Options{})
			if c.Version() != "1.82" || !c.SupportsAllocations() {
				t.Fatalf("version %s allocations %v", c.Version(), c.SupportsAllocations())
			}
			old := pvClient(t, url+"/v1/", Options{MaxVersion: "1.51"})
			if old.Version() != "1.51" || old.SupportsAllocations() {
				t.Fatalf("capped: version %s allocations %v", old.Version(), old.SupportsAllocations())
			}
			_, err := old.CreateAllocation(pvCtx(t, timeout), AllocationRequest{ResourceClass: "x"})
			pvWantErr(t, err, ErrUnsupported, "1.52")
			if _, err := New(context.Background(), Options{URL: url, MaxVersion: "2.0"}); err == nil {
				t.Fatal("MaxVersion 2.0 accepted")
			}
		})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c := pvClient(t, url, Options{PollInterval: 50 * time.Millisecond})
				name := func(s string) string { return prefix + "-" + strings.ToLower(tc.name) + "-" + s }
				tc.fn(t, c, name, seed, pvCtx(t, timeout))
			})
		}
	})
	t.Logf("client suite against %s took %v", url, time.Since(start).Round(time.Millisecond))
}

func pvTestNodes(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	rc := name("rc")
	ids := seed(t, pvNode{Name: name("a"), ResourceClass: rc},
		pvNode{Name: name("b"), ResourceClass: rc, Traits: []string{"CUSTOM_ZED", "CUSTOM_ALPHA"}})
	all, err := c.ListNodes(ctx)
	pvNoErr(t, err)
	byID := map[string]Node{}
	for _, n := range all {
		byID[n.UUID] = n
	}
	for i, id := range ids {
		n, ok := byID[id]
		if !ok {
			t.Fatalf("node %s missing from ListNodes (%d nodes)", id, len(all))
		}
		if n.ResourceClass != rc || n.ProvisionState != "available" || n.TargetProvisionState != "" ||
			n.PowerState != "power off" || n.Maintenance || n.InstanceUUID != "" || n.AllocationUUID != "" {
			t.Fatalf("listed node %d: %+v", i, n)
		}
		if n.Properties["cpus"] != "8" || n.Properties["memory_mb"] != "16384" || n.Properties["local_gb"] != "100" ||
			n.Capabilities["boot_mode"] != "uefi" || len(n.Capabilities) != 1 {
			t.Fatalf("properties %v capabilities %v", n.Properties, n.Capabilities)
		}
	}
	if got := byID[ids[1]].Traits; !slices.Equal(got, []string{"CUSTOM_ALPHA", "CUSTOM_ZED"}) {
		t.Fatalf("traits %v", got)
	}
	if got := byID[ids[0]].Traits; got == nil || len(got) != 0 {
		t.Fatalf("no traits: %#v", got)
	}
	n, err := c.GetNode(ctx, name("b"))
	pvNoErr(t, err)
	if n.UUID != ids[1] || n.Name != name("b") || !slices.Equal(n.Traits, byID[ids[1]].Traits) ||
		n.Properties["cpus"] != "8" {
		t.Fatalf("GetNode by name: %+v", n)
	}
}

func pvTestAllocationIdempotent(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	rc := name("rc")
	ids := seed(t, pvNode{Name: name("n"), ResourceClass: rc, Traits: []string{"CUSTOM_GPU"}})
	id := uuid.NewString()
	req := AllocationRequest{UUID: id, Name: AllocationName(id), ResourceClass: rc, Traits: []string{"CUSTOM_GPU"},
		Extra: map[string]string{"server": id}}
	a, err := c.CreateAllocation(ctx, req)
	pvNoErr(t, err)
	if a.UUID != id || a.Name != AllocationName(id) || a.ResourceClass != rc || a.Extra["server"] != id {
		t.Fatalf("created: %+v", a)
	}
	a, err = c.WaitAllocation(ctx, id)
	pvNoErr(t, err)
	if a.State != "active" || a.NodeUUID != ids[0] || a.LastError != "" || !slices.Equal(a.Traits, []string{"CUSTOM_GPU"}) {
		t.Fatalf("waited: %+v", a)
	}
	again, err := c.CreateAllocation(ctx, req)
	pvNoErr(t, err)
	if again.UUID != id || again.State != "active" || again.NodeUUID != ids[0] {
		t.Fatalf("retry: %+v", again)
	}
	byName, err := c.GetAllocation(ctx, AllocationName(id))
	pvNoErr(t, err)
	if byName.UUID != id {
		t.Fatalf("by name: %+v", byName)
	}
	n, err := c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if n.InstanceUUID != id || n.AllocationUUID != id {
		t.Fatalf("node after allocation: instance %q allocation %q", n.InstanceUUID, n.AllocationUUID)
	}
	// Another server asking for the same name (a collision) is a conflict, not a success.
	other := uuid.NewString()
	_, err = c.CreateAllocation(ctx, AllocationRequest{UUID: other, Name: AllocationName(id), ResourceClass: rc})
	pvWantErr(t, err, ErrConflict, "already exists")

	pvNoErr(t, c.DeleteAllocation(ctx, id))
	_, err = c.GetAllocation(ctx, id)
	pvWantErr(t, err, ErrNotFound, "could not be found")
	pvNoErr(t, c.DeleteAllocation(ctx, id))
	n, err = c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if n.InstanceUUID != "" || n.AllocationUUID != "" {
		t.Fatalf("node after delete: %+v", n)
	}
}

func pvTestAllocationError(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	rc := name("rc")
	seed(t, pvNode{Name: name("n"), ResourceClass: rc})
	for _, tc := range []struct {
		req  AllocationRequest
		want string
	}{
		{AllocationRequest{ResourceClass: rc + "-none"}, "no available nodes match the resource class " + rc + "-none."},
		{AllocationRequest{ResourceClass: rc, Traits: []string{"CUSTOM_NOPE"}},
			"no suitable nodes have the requested traits CUSTOM_NOPE."},
	} {
		tc.req.UUID = uuid.NewString()
		tc.req.Name = AllocationName(tc.req.UUID)
		a, err := c.CreateAllocation(ctx, tc.req)
		pvNoErr(t, err)
		a, err = c.WaitAllocation(ctx, a.UUID)
		pvNoErr(t, err)
		want := "Failed to process allocation " + tc.req.UUID + ": " + tc.want
		if a.State != "error" || a.NodeUUID != "" || a.LastError != want {
			t.Fatalf("allocation %+v, want error %q", a, want)
		}
		pvNoErr(t, c.DeleteAllocation(ctx, a.UUID))
	}
}

func pvTestDeployLifecycle(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	rc := name("rc")
	ids := seed(t, pvNode{Name: name("n"), ResourceClass: rc})
	id := uuid.NewString()
	a, err := c.CreateAllocation(ctx, AllocationRequest{UUID: id, Name: AllocationName(id), ResourceClass: rc})
	pvNoErr(t, err)
	if a, err = c.WaitAllocation(ctx, a.UUID); err != nil || a.State != "active" {
		t.Fatalf("allocation %+v: %v", a, err)
	}
	spec := DeploySpec{ImageSource: "http://images.example/" + name("img") + ".qcow2", RootGB: 10,
		Capabilities: map[string]string{"boot_mode": "uefi"}, DisplayName: name("server"),
		ConfigDrive: "H4sICDBfnV8AA2NvbmZpZy1kcml2ZQBLy8xJBQBLcBg6BQAAAA=="}
	pvNoErr(t, c.Deploy(ctx, a.NodeUUID, spec))
	n, err := c.GetNode(ctx, a.NodeUUID)
	pvNoErr(t, err)
	if !(n.ProvisionState == "deploying" && n.TargetProvisionState == "active") && n.ProvisionState != "active" {
		t.Fatalf("after Deploy: %s -> %s", n.ProvisionState, n.TargetProvisionState)
	}
	pvNoErr(t, c.Deploy(ctx, a.NodeUUID, spec)) // same spec while deploying or active: no-op
	n, err = c.WaitProvisionState(ctx, a.NodeUUID, "active")
	pvNoErr(t, err)
	ii := n.InstanceInfo
	if ii["image_source"] != spec.ImageSource || ii["root_gb"] != "10" || ii["display_name"] != spec.DisplayName ||
		ii["capabilities"] != `{"boot_mode":"uefi"}` || n.InstanceUUID != id || n.AllocationUUID != id {
		t.Fatalf("active node: %+v", n)
	}
	pvNoErr(t, c.Deploy(ctx, a.NodeUUID, spec))
	other := spec
	other.ImageSource += "-other"
	pvWantErr(t, c.Deploy(ctx, a.NodeUUID, other), ErrConflict, spec.ImageSource)

	err = c.DeleteAllocation(ctx, id)
	pvWantErr(t, err, ErrConflict, "because the node is active")
	if StatusOf(err) != 409 || !strings.HasPrefix(FaultOf(err), "Cannot remove allocation "+id) {
		t.Fatalf("status %d fault %q", StatusOf(err), FaultOf(err))
	}

	pvNoErr(t, c.Undeploy(ctx, ids[0]))
	pvNoErr(t, c.Undeploy(ctx, ids[0])) // deleting or available: no-op
	n, err = c.WaitProvisionState(ctx, ids[0], "available")
	pvNoErr(t, err)
	if n.InstanceUUID != "" || n.AllocationUUID != "" || n.InstanceInfo["image_source"] != "" {
		t.Fatalf("undeployed node: %+v", n)
	}
	_, err = c.GetAllocation(ctx, id)
	pvWantErr(t, err, ErrNotFound, id)
	pvNoErr(t, c.DeleteAllocation(ctx, id))
	pvNoErr(t, c.Undeploy(ctx, ids[0]))
}

// What the driver's server actions rely on: Ironic changes a node's
// updated_at as soon as it takes a power request, and its
// provision_updated_at as soon as it takes a rebuild; GetNode reads the
// latter, GetNodeDetail both.
func pvTestWitnesses(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	rc := name("rc")
	seed(t, pvNode{Name: name("n"), ResourceClass: rc})
	id := uuid.NewString()
	a, err := c.CreateAllocation(ctx, AllocationRequest{UUID: id, Name: AllocationName(id), ResourceClass: rc})
	pvNoErr(t, err)
	if a, err = c.WaitAllocation(ctx, a.UUID); err != nil || a.State != "active" {
		t.Fatalf("allocation %+v: %v", a, err)
	}
	spec := DeploySpec{ImageSource: "http://images.example/" + name("img") + ".qcow2"}
	pvNoErr(t, c.Deploy(ctx, a.NodeUUID, spec))
	_, err = c.WaitProvisionState(ctx, a.NodeUUID, "active")
	pvNoErr(t, err)
	before, err := c.GetNodeDetail(ctx, a.NodeUUID)
	pvNoErr(t, err)
	sel, err := c.GetNode(ctx, a.NodeUUID)
	pvNoErr(t, err)
	if before.UpdatedAt.IsZero() || before.ProvisionUpdatedAt.IsZero() || !sel.ProvisionUpdatedAt.Equal(before.ProvisionUpdatedAt) {
		t.Fatalf("timestamps: detail updated %v provision %v, selected provision %v", before.UpdatedAt, before.ProvisionUpdatedAt, sel.ProvisionUpdatedAt)
	}
	pvNoErr(t, c.SetPowerState(ctx, a.NodeUUID, PowerReboot))
	after, err := c.GetNodeDetail(ctx, a.NodeUUID)
	pvNoErr(t, err)
	if after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a power request Ironic took left updated_at at %v", before.UpdatedAt)
	}
	_, err = c.WaitPowerState(ctx, a.NodeUUID, PowerOn)
	pvNoErr(t, err)
	pvNoErr(t, c.Rebuild(ctx, a.NodeUUID, DeploySpec{ImageSource: spec.ImageSource + "-2"}))
	rebuilt, err := c.GetNode(ctx, a.NodeUUID)
	pvNoErr(t, err)
	if rebuilt.ProvisionUpdatedAt.Equal(before.ProvisionUpdatedAt) {
		t.Fatalf("a rebuild Ironic took left provision_updated_at at %v (state %s)", before.ProvisionUpdatedAt, rebuilt.ProvisionState)
	}
	_, err = c.WaitProvisionState(ctx, a.NodeUUID, "active")
	pvNoErr(t, err)
}

func pvTestReserveRelease(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	ids := seed(t, pvNode{Name: name("n"), ResourceClass: name("rc")})
	u1, u2 := uuid.NewString(), uuid.NewString()
	pvNoErr(t, c.ReserveNode(ctx, ids[0], u1))
	pvNoErr(t, c.ReserveNode(ctx, ids[0], u1))
	pvWantErr(t, c.ReserveNode(ctx, ids[0], u2), ErrConflict, "associated with instance "+u1)
	pvNoErr(t, c.ReleaseNode(ctx, ids[0], u2)) // not u2's: left alone
	n, err := c.GetNode(ctx, ids[0])
	pvNoErr(t, err)
	if n.InstanceUUID != u1 || n.AllocationUUID != "" {
		t.Fatalf("reserved node: %+v", n)
	}
	pvNoErr(t, c.ReleaseNode(ctx, ids[0], u1))
	pvNoErr(t, c.ReleaseNode(ctx, ids[0], u1))
	if n, err = c.GetNode(ctx, ids[0]); err != nil || n.InstanceUUID != "" {
		t.Fatalf("released node: %+v %v", n, err)
	}
	// The deploy path of the old reservation: instance_uuid, deploy, undeploy.
	pvNoErr(t, c.ReserveNode(ctx, ids[0], u2))
	pvNoErr(t, c.Deploy(ctx, ids[0], DeploySpec{ImageSource: "http://images.example/old.img"}))
	if n, err = c.WaitProvisionState(ctx, ids[0], "active"); err != nil || n.InstanceUUID != u2 {
		t.Fatalf("deployed: %+v %v", n, err)
	}
	pvNoErr(t, c.Undeploy(ctx, ids[0]))
	if n, err = c.WaitProvisionState(ctx, ids[0], "available"); err != nil || n.InstanceUUID != "" {
		t.Fatalf("undeployed: %+v %v", n, err)
	}
}

func pvTestVIFs(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	ids := seed(t, pvNode{Name: name("n"), ResourceClass: name("rc")})
	vif := uuid.NewString()
	pvNoErr(t, c.AttachVIF(ctx, ids[0], vif))
	pvNoErr(t, c.AttachVIF(ctx, ids[0], vif))
	vifs, err := c.ListVIFs(ctx, ids[0])
	pvNoErr(t, err)
	// The noop network interface accepts attachments and records none.
	if vifs == nil || len(vifs) != 0 {
		t.Fatalf("vifs: %#v", vifs)
	}
	pvNoErr(t, c.DetachVIF(ctx, ids[0], vif))
	pvNoErr(t, c.DetachVIF(ctx, ids[0], uuid.NewString()))
	_, err = c.ListVIFs(ctx, name("ghost"))
	pvWantErr(t, err, ErrNotFound, "Node "+name("ghost")+" could not be found.")
}

func pvTestErrors(t *testing.T, c *Client, name func(string) string, seed pvSeed, ctx context.Context) {
	ids := seed(t, pvNode{Name: name("n"), ResourceClass: name("rc")})
	ghost := name("ghost")
	_, err := c.GetNode(ctx, ghost)
	pvWantErr(t, err, ErrNotFound, "Node "+ghost+" could not be found.")
	var e *Error
	if !errors.As(err, &e) || e.Call != "GetNode" || e.Status != 404 || e.Fault != "Node "+ghost+" could not be found." ||
		!strings.HasPrefix(err.Error(), "ironic GetNode (GET ") {
		t.Fatalf("error: %#v / %v", e, err)
	}
	pvWantErr(t, c.ReserveNode(ctx, ghost, uuid.NewString()), ErrNotFound, ghost)
	_, err = c.WaitProvisionState(ctx, ghost, "active")
	pvWantErr(t, err, ErrNotFound, ghost)

	_, err = c.CreateAllocation(ctx, AllocationRequest{ResourceClass: name("rc"), Traits: []string{"gpu"}})
	pvWantErr(t, err, ErrInvalid, "'gpu' does not match '^CUSTOM_[A-Z0-9_]+$'")
	_, err = c.CreateAllocation(ctx, AllocationRequest{ResourceClass: name("rc"), Name: "Bad Name"})
	pvWantErr(t, err, ErrInvalid, "Cannot create allocation with invalid name 'Bad Name'")
	pvWantErr(t, c.Deploy(ctx, ids[0], DeploySpec{}), ErrInvalid, "image source")

	// Waiting for a state that never comes ends with the context, naming the last state seen.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = c.WaitProvisionState(wctx, ids[0], "active")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last seen available") {
		t.Fatalf("wait timeout: %v", err)
	}
}
