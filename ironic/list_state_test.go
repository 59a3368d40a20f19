package ironic

import (
	"context"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/ironic/sim"
)

// ListNodesInState lists only the nodes in one provision state, page by
// page with the filter kept on every page, with the fields a waiter needs.
func TestListNodesInState(t *testing.T) {
	s, p, url := pvSim(t, sim.Options{DeployDelay: time.Hour})
	ids := s.SeedNodes(5, "gold")
	c := pvClient(t, url, Options{Logger: pvQuiet, pageSize: 2})
	ctx := pvCtx(t, 10*time.Second)
	deploying := ids[1:4]
	for _, id := range deploying {
		pvNoErr(t, c.Deploy(ctx, id, DeploySpec{ImageSource: "http://images.example.test/a.qcow2"}))
	}
	before := p.count(http.MethodGet, "/v1/nodes", 200)
	nodes, err := c.ListNodesInState(ctx, StateDeploying)
	pvNoErr(t, err)
	var got []string
	for _, n := range nodes {
		if n.ProvisionState != StateDeploying || n.TargetProvisionState != StateActive {
			t.Fatalf("listed node %+v", n)
		}
		got = append(got, n.UUID)
	}
	if !slices.Equal(got, deploying) {
		t.Fatalf("deploying nodes %v, want %v", got, deploying)
	}
	if pages := p.count(http.MethodGet, "/v1/nodes", 200) - before; pages != 2 {
		t.Fatalf("%d requests for 3 nodes at 2 per page, want 2", pages)
	}
	avail, err := c.ListNodesInState(ctx, StateAvailable)
	pvNoErr(t, err)
	if len(avail) != 2 || avail[0].UUID != ids[0] || avail[1].UUID != ids[4] {
		t.Fatalf("available nodes %+v", avail)
	}
	none, err := c.ListNodesInState(ctx, StateActive)
	pvNoErr(t, err)
	if len(none) != 0 {
		t.Fatalf("active nodes %+v, want none", none)
	}
}

// The same listing against a real Ironic (IRONIC_URL): the filter holds on
// every page and the fields a waiter reads are there.
func TestListNodesInStateRealIronic(t *testing.T) {
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL not set: export IRONIC_URL=$(scripts/ironic-up.sh)")
	}
	c := pvClient(t, u, Options{Logger: pvQuiet, pageSize: 2})
	ctx := pvCtx(t, 60*time.Second)
	var mine []string
	for range 3 {
		n, err := c.CreateNode(ctx, NodeSpec{UUID: uuid.NewString(), Driver: "fake-hardware", ResourceClass: pvPrefix(t)})
		pvNoErr(t, err)
		mine = append(mine, n.UUID)
		t.Cleanup(func() { _ = c.DeleteNode(context.Background(), n.UUID) })
	}
	nodes, err := c.ListNodesInState(ctx, "enroll")
	pvNoErr(t, err)
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.ProvisionState != "enroll" || n.UUID == "" {
			t.Fatalf("listed node %+v in a listing of enroll", n)
		}
		seen[n.UUID] = true
	}
	for _, id := range mine {
		if !seen[id] {
			t.Fatalf("node %s (enroll) missing from %d listed", id, len(nodes))
		}
	}
}
