package driver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// With one worker, six deploys are in flight at once: a deploy waits in
// the host's watcher, not in a worker. The wait costs a listing per
// round, not a read per node per interval. The simulator holds the
// deploys until the test has seen the watcher's rounds, so that neither
// check depends on how fast the boots start or the rounds come.
func TestDeploysInFlightHoldNoWorker(t *testing.T) {
	const n = 6
	// The deploys last as long as the test holds them: the deploy timeout
	// must not end them first on a slow machine.
	w := newWorldCfg(t, 1, sim.Options{}, nil,
		driver.Config{DeployTimeout: 5 * time.Minute}, compute.Config{Workers: 1})
	w.sim.HoldDeploys()
	w.sim.SeedNodes(n, "baremetal-gold")
	w.waitMirror(n)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	var ids []string
	for range n {
		ids = append(ids, w.boot("gold"))
	}
	testkit.Eventually(t, time.Minute, func() error {
		deploying := 0
		for _, st := range w.sim.Nodes() {
			if st.ProvisionState == "deploying" {
				deploying++
			}
		}
		if deploying != n {
			return fmt.Errorf("%d of %d nodes deploying at once", deploying, n)
		}
		return nil
	})
	// While the deploys run, the watcher's rounds list the deploying
	// nodes and read none of them one by one.
	lists, reads := listings(w.sim), driverRequests(w.sim)
	testkit.Eventually(t, time.Minute, func() error {
		if got := listings(w.sim) - lists; got < 4 {
			return fmt.Errorf("%d rounds of the watcher so far", got)
		}
		return nil
	})
	if got := driverRequests(w.sim) - reads - (listings(w.sim) - lists); got != 0 {
		t.Fatalf("%d Ironic requests besides the watcher's listings while %d deploys ran", got, n)
	}
	// Once they end, a round or two see every node active.
	before := driverRequests(w.sim)
	w.sim.ReleaseDeploys()
	for _, id := range ids {
		w.waitStatus(id, fsm.StatusActive)
	}
	if got := driverRequests(w.sim) - before; got > n {
		t.Fatalf("%d Ironic requests to see %d deploys end", got, n)
	}
}

// failing reports a chosen node as "deploy failed" once its deploy began,
// like an Ironic whose deploy step broke.
type failing struct {
	driver.Ironic
	mu     sync.Mutex
	broken map[string]bool
}

func (f *failing) fail(n ironic.Node) ironic.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken[n.UUID] && (n.ProvisionState == ironic.StateDeploying || n.ProvisionState == ironic.StateActive) {
		n.ProvisionState, n.TargetProvisionState, n.LastError = ironic.StateDeployFailed, "", "IPMI power on failed: BMC unreachable"
	}
	return n
}

func (f *failing) GetNode(ctx context.Context, id string) (ironic.Node, error) {
	n, err := f.Ironic.GetNode(ctx, id)
	return f.fail(n), err
}

func (f *failing) ListNodesInState(ctx context.Context, state string) ([]ironic.Node, error) {
	ns, err := f.Ironic.ListNodesInState(ctx, state)
	var out []ironic.Node
	for _, n := range ns {
		if n = f.fail(n); n.ProvisionState == state {
			out = append(out, n)
		}
	}
	return out, err
}

// A deploy that fails in Ironic ends the build in ERROR with Ironic's
// reason, learned by the watcher.
func TestWatcherReportsDeployFailure(t *testing.T) {
	f := &failing{broken: map[string]bool{}}
	w := newWorldCfg(t, 1, sim.Options{}, func(in driver.Ironic) driver.Ironic {
		f.Ironic = in
		return f
	}, driver.Config{DeployTimeout: 5 * time.Minute}, compute.Config{})
	w.sim.HoldDeploys() // deploying until the test breaks it
	node := w.sim.SeedNodes(1, "baremetal-gold")[0]
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := w.boot("gold")
	testkit.Eventually(t, 10*time.Second, func() error {
		if st := w.sim.Nodes()[0]; st.ProvisionState != "deploying" {
			return fmt.Errorf("node is %s", st.ProvisionState)
		}
		return nil
	})
	f.mu.Lock()
	f.broken[node] = true
	f.mu.Unlock()
	s := w.waitStatus(id, fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "BMC unreachable") || !strings.Contains(s.Fault.Message, node) {
		t.Fatalf("fault %+v, want Ironic's last_error and the node", s.Fault)
	}
}

// A deploy that outlives the deploy timeout ends in ERROR saying so.
func TestWatcherTimesOutADeploy(t *testing.T) {
	w := newWorldCfg(t, 1, sim.Options{DeployDelay: time.Hour}, nil,
		driver.Config{DeployTimeout: 1500 * time.Millisecond}, compute.Config{})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	s := w.waitStatus(w.boot("gold"), fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "did not finish within") || !strings.Contains(s.Fault.Message, "deploying") {
		t.Fatalf("fault %+v, want the timeout and the last state", s.Fault)
	}
}

// The old way, a worker polling its node, still builds and deletes.
func TestPollModeBuildsAndDeletes(t *testing.T) {
	w := newWorldCfg(t, 1, sim.Options{DeployDelay: 100 * time.Millisecond, UndeployDelay: 100 * time.Millisecond}, nil,
		driver.Config{Wait: driver.WaitPoll, DeployTimeout: 20 * time.Second}, compute.Config{})
	w.sim.SeedNodes(2, "baremetal-gold")
	w.waitMirror(2)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	a, b := w.boot("gold"), w.boot("gold")
	w.waitStatus(a, fsm.StatusActive)
	w.waitStatus(b, fsm.StatusActive)
	if err := w.propose(&fsm.DeleteServer{ID: a}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(a, fsm.StatusDeleted)
	if got := listings(w.sim); got != 0 {
		t.Fatalf("poll mode listed nodes by state %d times", got)
	}
}

// driverRequests counts the requests under /v1 but the node sync's
// (GET /v1/nodes/detail, at its own interval).
func driverRequests(s *sim.Server) int {
	return s.Requests("", "/v1") - s.Requests("GET", "/v1/nodes/detail")
}

// listings counts GET /v1/nodes (the watcher's listing by state; node
// reads and the mirror's /v1/nodes/detail are under /v1/nodes/).
func listings(s *sim.Server) int {
	return s.Requests("GET", "/v1/nodes") - s.Requests("GET", "/v1/nodes/")
}
