package contract

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

func TestContractSim(t *testing.T) {
	s := sim.New(sim.Options{})
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	runContract(t, ts.URL, false)
}

// TestContractSimWithDelays runs the suite on a simulator whose transitions take about as long
// as a real Ironic's, so that every wait in the suite meets an intermediate state.
func TestContractSimWithDelays(t *testing.T) {
	s := sim.New(sim.Options{
		DeployDelay: 300 * time.Millisecond, UndeployDelay: 300 * time.Millisecond,
		ManageDelay: 100 * time.Millisecond, CleanDelay: 100 * time.Millisecond,
		PowerDelay: 50 * time.Millisecond, AllocationDelay: 30 * time.Millisecond,
		Latency: 5 * time.Millisecond,
	})
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	runContract(t, ts.URL, false)
}

// TestContractSimFlat runs the suite on a simulator whose nodes may use the flat network
// interface, as an Ironic with enabled_network_interfaces = noop,flat.
func TestContractSimFlat(t *testing.T) {
	s := sim.New(sim.Options{NetworkInterfaces: []string{"noop", "flat"}})
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	runContract(t, ts.URL, false)
}

func TestContractReal(t *testing.T) {
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL not set: run scripts/ironic-up.sh (IRONIC_URL=$(scripts/ironic-up.sh) go test ./ironic/contract/)")
	}
	runContract(t, u, true)
}

// runContract runs every case against the Ironic at root. Cases isolate themselves by resource
// class and name, so they run in parallel.
func runContract(t *testing.T, root string, real bool) {
	start := time.Now()
	env, err := NewEnv(root, real)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("contract run %s against %s", env.Prefix, root)
	cases := []struct {
		name string
		fn   func(*testing.T, *Env)
	}{
		{"Versions", testVersions},
		{"OldMicroversionHidesAllocations", testOldMicroversion},
		{"Lifecycle", testLifecycle},
		{"AllocationLifecycle", testAllocationLifecycle},
		{"AllocationErrors", testAllocationErrors},
		{"AllocationMatching", testAllocationMatching},
		{"PowerNullAndOldReservation", testPowerNullAndOldReservation},
		{"PortsAndVIFs", testPortsAndVIFs},
		{"FlatVIFs", testFlatVIFs},
		{"ListPaging", testListPaging},
	}
	t.Run("group", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.fn(t, env)
			})
		}
	})
	t.Logf("contract run took %v", time.Since(start).Round(time.Millisecond))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// result carries a value and an error to a test assertion: must(f()).get(t).
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

func (r result[T]) get(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func rawJSON(t *testing.T, r *Raw) map[string]any {
	t.Helper()
	m, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testVersions(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	root := must(e.Do(ctx, http.MethodGet, "/", "", nil)).get(t)
	if root.Status != http.StatusOK {
		t.Fatalf("GET /: %d", root.Status)
	}
	dv, _ := rawJSON(t, root)["default_version"].(map[string]any)
	if dv["id"] != "v1" || dv["min_version"] != "1.1" || dv["status"] != "CURRENT" {
		t.Fatalf("default_version = %v", dv)
	}
	maxV, _ := dv["version"].(string)
	if maxV < "1.52" {
		t.Fatalf("max version %q: allocations unsupported", maxV)
	}

	v1 := must(e.Do(ctx, http.MethodGet, "/v1", "", nil)).get(t)
	if v1.Status != http.StatusOK || v1.Header.Get("X-OpenStack-Ironic-API-Version") != "1.1" ||
		v1.Header.Get("X-OpenStack-Ironic-API-Maximum-Version") != maxV ||
		v1.Header.Get("X-OpenStack-Ironic-API-Minimum-Version") != "1.1" {
		t.Fatalf("GET /v1: %d %v", v1.Status, v1.Header)
	}
	if m := rawJSON(t, v1); m["id"] != "v1" || m["nodes"] == nil {
		t.Fatalf("GET /v1 body: %v", m)
	}

	latest := must(e.Do(ctx, http.MethodGet, "/v1/nodes?limit=1", "latest", nil)).get(t)
	if latest.Status != http.StatusOK || latest.Header.Get("X-OpenStack-Ironic-API-Version") != maxV {
		t.Fatalf("latest: %d %v", latest.Status, latest.Header)
	}

	bad := must(e.Do(ctx, http.MethodGet, "/v1/nodes", "1.999", nil)).get(t)
	wantRange := "The supported version range is: [1.1, " + maxV + "]."
	if bad.Status != http.StatusNotAcceptable || !strings.HasSuffix(Fault(bad.Body), wantRange) ||
		bad.Header.Get("X-OpenStack-Ironic-API-Maximum-Version") != maxV {
		t.Fatalf("1.999: %d %q", bad.Status, bad.Body)
	}
	if want := "Version 1.999 was requested but the minor version is not supported by this service. " + wantRange; Fault(bad.Body) != want {
		t.Fatalf("1.999 message %q, want %q", Fault(bad.Body), want)
	}
	junk := must(e.Do(ctx, http.MethodGet, "/v1/nodes", "junk", nil)).get(t)
	if junk.Status != http.StatusNotAcceptable ||
		Fault(junk.Body) != "Invalid value for X-OpenStack-Ironic-API-Version header" {
		t.Fatalf("junk version: %d %q", junk.Status, junk.Body)
	}

	zero := must(e.Do(ctx, http.MethodGet, "/v1/nodes?limit=0", Microversion, nil)).get(t)
	if zero.Status != http.StatusBadRequest || Fault(zero.Body) != "Limit must be positive" {
		t.Fatalf("limit=0: %d %q", zero.Status, zero.Body)
	}
	abc := must(e.Do(ctx, http.MethodGet, "/v1/nodes?limit=abc", Microversion, nil)).get(t)
	if abc.Status != http.StatusBadRequest || Fault(abc.Body) != "Expected an integer for limit: abc" {
		t.Fatalf("limit=abc: %d %q", abc.Status, abc.Body)
	}
	missing := must(e.Do(ctx, http.MethodGet, "/v1/nodes/"+e.Name("missing"), Microversion, nil)).get(t)
	if missing.Status != http.StatusNotFound || Fault(missing.Body) != "Node "+e.Name("missing")+" could not be found." {
		t.Fatalf("missing node: %d %q", missing.Status, missing.Body)
	}
}

func testOldMicroversion(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	for _, v := range []string{"", "1.51"} {
		post := must(e.Do(ctx, http.MethodPost, "/v1/allocations", v,
			map[string]any{"name": e.Name("old"), "resource_class": e.Name("old")})).get(t)
		if post.Status != http.StatusMethodNotAllowed || Fault(post.Body) != "The API version does not allow allocations" {
			t.Fatalf("POST allocations at %q: %d %q", v, post.Status, post.Body)
		}
		get := must(e.Do(ctx, http.MethodGet, "/v1/allocations", v, nil)).get(t)
		if get.Status != http.StatusNotFound || Fault(get.Body) != "The API version does not allow allocations" {
			t.Fatalf("GET allocations at %q: %d %q", v, get.Status, get.Body)
		}
		if get.Header.Get("X-OpenStack-Ironic-API-Version") != "" {
			t.Fatalf("GET allocations at %q carries a version header: %v", v, get.Header)
		}
	}
	ids := must(e.Enroll(ctx, NodeSpec{Name: e.Name("old0"), ResourceClass: e.Name("old")})).get(t)
	t.Cleanup(func() { e.Cleanup(context.Background(), nil, ids) })
	for _, tc := range []struct {
		version string
		present []string
		absent  []string
	}{
		{"", nil, []string{"name", "resource_class", "traits", "allocation_uuid"}},
		{"1.20", []string{"name"}, []string{"resource_class", "traits", "allocation_uuid"}},
		{"1.21", []string{"name", "resource_class"}, []string{"traits", "allocation_uuid"}},
		{"1.37", []string{"resource_class", "traits"}, []string{"allocation_uuid"}},
		{"1.52", []string{"resource_class", "traits", "allocation_uuid"}, nil},
	} {
		r := must(e.Do(ctx, http.MethodGet, "/v1/nodes/"+ids[0], tc.version, nil)).get(t)
		if r.Status != http.StatusOK {
			t.Fatalf("GET node at %q: %d %q", tc.version, r.Status, r.Body)
		}
		m := rawJSON(t, r)
		for _, f := range tc.present {
			if _, ok := m[f]; !ok {
				t.Errorf("at %q node lacks %s", tc.version, f)
			}
		}
		for _, f := range tc.absent {
			if _, ok := m[f]; ok {
				t.Errorf("at %q node has %s", tc.version, f)
			}
		}
	}
	// Node names are not understood before 1.5.
	byName := must(e.Do(ctx, http.MethodGet, "/v1/nodes/"+e.Name("old0"), "", nil)).get(t)
	if byName.Status != http.StatusNotFound {
		t.Fatalf("GET node by name at 1.1: %d %q", byName.Status, byName.Body)
	}
}
