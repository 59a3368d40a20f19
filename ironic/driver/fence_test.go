package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// watched counts a driver's Ironic calls and runs onFirstGet once, on
// the result of the driver's first GetNode, before the driver sees it.
type watched struct {
	driver.Ironic
	onFirstGet func(ironic.Node)

	once  sync.Once
	mu    sync.Mutex
	calls map[string]int
}

func (w *watched) count(call string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[string]int{}
	}
	w.calls[call]++
}

func (w *watched) n(call string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[call]
}

func (w *watched) GetNode(ctx context.Context, id string) (ironic.Node, error) {
	n, err := w.Ironic.GetNode(ctx, id)
	w.count("GetNode")
	if err == nil && w.onFirstGet != nil {
		w.once.Do(func() { w.onFirstGet(n) })
	}
	return n, err
}

func (w *watched) AttachVIF(ctx context.Context, nodeID, vifID string) error {
	w.count("AttachVIF")
	return w.Ironic.AttachVIF(ctx, nodeID, vifID)
}

func (w *watched) Deploy(ctx context.Context, nodeID string, spec ironic.DeploySpec) error {
	w.count("Deploy")
	return w.Ironic.Deploy(ctx, nodeID, spec)
}

// An owner that read its node, then was paused while the node was freed
// (its replica still saying the node is its own), must not attach VIFs to
// it or deploy it for nobody when it resumes: it checks the reservation
// again right before each side effect.
func TestDriverDoesNotTouchANodeItNoLongerHolds(t *testing.T) {
	for _, mode := range []string{driver.ReserveAllocations, driver.ReserveInstanceUUID} {
		t.Run(mode, func(t *testing.T) {
			var w *world
			var ir *watched
			freed := make(chan error, 1)
			w = newWorldWith(t, 1, mode, sim.Options{}, func(inner driver.Ironic) driver.Ironic {
				ir = &watched{Ironic: inner, onFirstGet: func(n ironic.Node) {
					// What happens while the owner is paused: the node's
					// reservation goes away behind its back.
					ctx := context.Background()
					var err error
					if n.AllocationUUID != "" {
						err = inner.DeleteAllocation(ctx, n.AllocationUUID)
					} else {
						err = inner.ReleaseNode(ctx, n.UUID, n.InstanceUUID)
					}
					freed <- err
				}}
				return ir
			})
			w.sim.SeedNodes(1, "baremetal-gold")
			w.waitMirror(1)
			w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
			id := uuid.NewString()
			nets := []fsm.Network{{UUID: "net-a"}}
			if err := w.propose(&fsm.CreateServer{ID: id, Name: "f", FlavorID: "gold", ImageRef: "img", Networks: nets}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-freed:
				if err != nil {
					t.Fatalf("freeing the node: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the driver never read its node")
			}
			// Wait until the driver is past the point where it would have
			// deployed: it has read the node again (a check, a retry).
			testkit.Eventually(t, 20*time.Second, func() error {
				if ir.n("Deploy") > 0 || ir.n("GetNode") >= 3 {
					return nil
				}
				return fmt.Errorf("%d GetNode, %d Deploy", ir.n("GetNode"), ir.n("Deploy"))
			})
			if a, d := ir.n("AttachVIF"), ir.n("Deploy"); a != 0 || d != 0 {
				t.Fatalf("the driver attached %d VIFs to and sent %d deploys for a node it no longer held", a, d)
			}
			st := w.sim.Nodes()[0]
			if st.ProvisionState != "available" || st.InstanceUUID != "" || st.AllocationUUID != "" || len(st.VIFs) != 0 {
				t.Fatalf("node %+v", st)
			}
			s, err := w.leader().Node.Store().Server(id)
			if err != nil || s.Status != fsm.StatusBuild {
				t.Fatalf("server %+v %v, want still BUILD", s, err)
			}
		})
	}
}

// A deploy Ironic refuses ends the build in ERROR with Ironic's reason as
// the fault, instead of a BUILD retried forever.
func TestRefusedDeployEndsInError(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{})
	node := w.sim.SeedNodes(1, "baremetal-gold")[0]
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	w.sim.FailNext(http.MethodPut, "/v1/nodes/"+node+"/states/provision", http.StatusBadRequest, 1)
	s := w.waitStatus(w.boot("gold"), fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "Ironic refused to deploy") ||
		!strings.Contains(s.Fault.Message, "Injected fault.") || !strings.Contains(s.Fault.Message, node) {
		t.Fatalf("fault %+v, want Ironic's refusal and reason", s.Fault)
	}
	if st := w.sim.Nodes()[0]; st.ProvisionState != "available" {
		t.Fatalf("node %s is %s after a refused deploy", st.UUID, st.ProvisionState)
	}
}
