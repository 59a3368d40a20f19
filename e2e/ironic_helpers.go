package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/contract"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/wire"
)

// ComputeMicroversion is the compute API version the e2e clients speak: it
// shows the flavor embedded in a server.
const ComputeMicroversion = "2.47"

// Ironic is the Ironic a test drives corral against: the embedded simulator
// served in-process, or a real Ironic ($IRONIC_URL). Tests isolate
// themselves on a shared Ironic by resource class and node names, both
// derived from a per-Ironic random prefix.
type Ironic struct {
	URL  string
	Real bool
	Sim  *sim.Server // nil for a real Ironic
	Env  *contract.Env
	seq  int
	mu   sync.Mutex
}

// RealIronic returns the Ironic at $IRONIC_URL, or skips the test.
func RealIronic(t testing.TB) *Ironic {
	t.Helper()
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL is not set: start a real Ironic with `export IRONIC_URL=$(scripts/ironic-up.sh)` to run this test")
	}
	return newIronic(t, u, true, nil)
}

// SimIronic serves a new Ironic simulator on 127.0.0.1 until the test ends.
// Call it before starting the agents, so that it outlives them.
func SimIronic(t testing.TB, opts sim.Options) *Ironic {
	t.Helper()
	s := sim.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		s.Close()
	})
	return newIronic(t, ts.URL, false, s)
}

func newIronic(t testing.TB, url string, real bool, s *sim.Server) *Ironic {
	t.Helper()
	env, err := contract.NewEnv(url, real)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	env.Prefix = "e2e" + hex.EncodeToString(b)
	return &Ironic{URL: env.Root, Real: real, Sim: s, Env: env}
}

// Class returns a resource class unique to this Ironic, e.g. "e2e1a2b3c-gold".
func (ir *Ironic) Class(name string) string { return ir.Env.Name(name) }

// EnrollNodes creates n available, powered-off nodes of the resource class
// and returns their UUIDs. On a real Ironic they go through enroll → manage
// → provide; at the end of the test they are undeployed and deleted with
// their allocations. Enroll before starting the agents: the clean-up then
// runs after the agents have stopped.
func (ir *Ironic) EnrollNodes(t testing.TB, n int, class string) []string {
	t.Helper()
	ir.mu.Lock()
	first := ir.seq
	ir.seq += n
	ir.mu.Unlock()
	specs := make([]contract.NodeSpec, n)
	for i := range specs {
		specs[i] = contract.NodeSpec{Name: fmt.Sprintf("%s-%s-%d", ir.Env.Prefix, strings.TrimPrefix(class, ir.Env.Prefix+"-"), first+i),
			ResourceClass: class}
	}
	if ir.Sim != nil {
		seed := make([]sim.NodeSpec, n)
		for i, sp := range specs {
			seed[i] = sim.NodeSpec{Name: sp.Name, ResourceClass: class,
				Properties: map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"}}
		}
		return ir.Sim.Seed(seed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids, err := ir.Env.Enroll(ctx, specs...)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer ccancel()
		ir.Env.Cleanup(cctx, []string{class}, ids)
	})
	if err != nil {
		t.Fatalf("enroll %d nodes of %s: %v", n, class, err)
	}
	return ids
}

// Node reads a node from Ironic.
func (ir *Ironic) Node(ctx context.Context, id string) (*nodes.Node, error) {
	return nodes.Get(ctx, ir.Env.Client, id).Extract()
}

// Allocation reads an allocation from Ironic; nil when Ironic has none
// with that id or name.
func (ir *Ironic) Allocation(ctx context.Context, id string) (*allocations.Allocation, error) {
	a, err := allocations.Get(ctx, ir.Env.Client, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, nil
	}
	return a, err
}

// Allocations lists Ironic's allocations of a resource class.
func (ir *Ironic) Allocations(ctx context.Context, class string) ([]allocations.Allocation, error) {
	pages, err := allocations.List(ir.Env.Client, allocations.ListOpts{ResourceClass: class, Limit: 1000}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return allocations.ExtractAllocations(pages)
}

// Compute is a gophercloud compute client for the agent's Nova API at
// ComputeMicroversion.
func Compute(a *Agent) *gophercloud.ServiceClient {
	pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: 30 * time.Second}}
	pc.SetToken(a.c.Token)
	url := a.URL() + "/compute/v2.1/"
	return &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: url, ResourceBase: url, Type: "compute", Microversion: ComputeMicroversion}
}

// BareMetalFlavor creates, through the agent, a bare-metal flavor asking
// for one node of the Ironic resource class (resources:CUSTOM_<CLASS>=1,
// standard classes zeroed) and returns its id.
func BareMetalFlavor(t testing.TB, a *Agent, name, ironicClass string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := Compute(a)
	disk := 100
	f, err := flavors.Create(ctx, cl, flavors.CreateOpts{Name: name, VCPUs: 8, RAM: 16384, Disk: &disk}).Extract()
	if err != nil {
		t.Fatalf("create flavor %s: %v", name, err)
	}
	specs := flavors.ExtraSpecsOpts{
		"resources:" + fsm.NormalizeResourceClass(ironicClass): "1",
		"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0",
	}
	if _, err := flavors.CreateExtraSpecs(ctx, cl, f.ID, specs).Extract(); err != nil {
		t.Fatalf("extra specs of flavor %s: %v", name, err)
	}
	return f.ID
}

// AddExtraSpecs adds extra specs to a flavor through the agent.
func AddExtraSpecs(t testing.TB, a *Agent, flavorID string, specs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := flavors.CreateExtraSpecs(ctx, Compute(a), flavorID, flavors.ExtraSpecsOpts(specs)).Extract(); err != nil {
		t.Fatalf("extra specs of flavor %s: %v", flavorID, err)
	}
}

// Boot asks for one server and returns its id.
func Boot(ctx context.Context, cl *gophercloud.ServiceClient, name, flavorID string) (string, error) {
	s, err := servers.Create(ctx, cl, servers.CreateOpts{Name: name, FlavorRef: flavorID,
		ImageRef: "http://images.example.test/ubuntu-24.04.qcow2", Networks: "none"}, nil).Extract()
	if err != nil {
		return "", fmt.Errorf("boot %s: %w", name, err)
	}
	return s.ID, nil
}

// Settled reports whether a server has left BUILD (ACTIVE or ERROR).
func Settled(s *servers.Server) bool { return s.Status == "ACTIVE" || s.Status == "ERROR" }

// WaitServers polls the servers until done holds for each, and returns
// them by id. It fails the test at the deadline, naming the laggards.
func WaitServers(t testing.TB, cl *gophercloud.ServiceClient, ids []string, timeout time.Duration, done func(*servers.Server) bool) map[string]*servers.Server {
	t.Helper()
	out := map[string]*servers.Server{}
	testkit.Eventually(t, timeout, func() error {
		var pending []string
		for _, id := range ids {
			if s, ok := out[id]; ok && done(s) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s, err := servers.Get(ctx, cl, id).Extract()
			cancel()
			if err != nil {
				return fmt.Errorf("get server %s: %w", id, err)
			}
			out[id] = s
			if !done(s) {
				pending = append(pending, fmt.Sprintf("%s (%s/%s)", id, s.Status, s.TaskState))
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d servers not there yet: %s", len(pending), strings.Join(pending, ", "))
		}
		return nil
	})
	return out
}

// WaitGone polls until GET answers 404 for every server.
func WaitGone(t testing.TB, cl *gophercloud.ServiceClient, ids []string, timeout time.Duration) {
	t.Helper()
	testkit.Eventually(t, timeout, func() error {
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s, err := servers.Get(ctx, cl, id).Extract()
			cancel()
			switch {
			case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
				continue
			case err != nil:
				return fmt.Errorf("get server %s: %w", id, err)
			}
			return fmt.Errorf("server %s still there: %s/%s", id, s.Status, s.TaskState)
		}
		return nil
	})
}

// AwaitNodes waits until the agent's node mirror shows every node available.
func AwaitNodes(t testing.TB, a *Agent, ids []string, timeout time.Duration) {
	t.Helper()
	testkit.Eventually(t, timeout, func() error {
		var body struct {
			Nodes []fsm.Node `json:"nodes"` // the mirror's own type, for Available
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Client().Do(ctx, http.MethodGet, "/v1/nodes", nil, &body); err != nil {
			return err
		}
		ok := 0
		for _, n := range body.Nodes {
			if slices.Contains(ids, n.UUID) && n.Available() {
				ok++
			}
		}
		if ok != len(ids) {
			return fmt.Errorf("%s mirrors %d of %d nodes as available", a.Name, ok, len(ids))
		}
		return nil
	})
}

// Reservations reads the committed node reservations (linearizable).
func Reservations(ctx context.Context, a *Agent) ([]fsm.Reservation, error) {
	var body struct {
		Reservations []fsm.Reservation `json:"reservations"`
	}
	err := a.Client().Do(ctx, http.MethodGet, "/v1/reservations?consistency=linearizable", nil, &body)
	return body.Reservations, err
}

// Hosts reads the hosts with their server counts and the capacity.
func Hosts(ctx context.Context, a *Agent) (wire.HostsResponse, error) {
	var body wire.HostsResponse
	err := a.Client().Do(ctx, http.MethodGet, "/v1/hosts?consistency=linearizable", nil, &body)
	return body, err
}

// IronicCluster starts n agents driving the Ironic, with a 1 s node sync
// and the extra environment (e.g. CORRAL_IRONIC_RESERVATION=instance_uuid),
// and waits until they are ready.
func IronicCluster(t testing.TB, n int, ir *Ironic, env ...string) *Cluster {
	t.Helper()
	c := Start(t, n, Options{ExtraArgs: []string{"--ironic-url", ir.URL},
		Env: append([]string{"CORRAL_IRONIC_SYNC_INTERVAL=1s"}, env...)})
	c.AwaitReady(60 * time.Second)
	for _, a := range c.Agents {
		if !a.Running() {
			t.Fatalf("agent %s exited during start-up (see its log in %s)", a.Name, c.Dir)
		}
	}
	return c
}

// FaultOf returns a server's fault message, or an error naming its state
// when it has none.
func FaultOf(s *servers.Server) (string, error) {
	if s.Fault.Message == "" {
		return "", errors.New("server " + s.ID + " is " + s.Status + " without a fault")
	}
	return s.Fault.Message, nil
}
