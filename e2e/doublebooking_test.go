package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/ironic/sim"
)

// TestNoDoubleBookingSim races 20 boots for 10 simulated nodes.
func TestNoDoubleBookingSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ir := SimIronic(t, sim.Options{DeployDelay: 300 * time.Millisecond, UndeployDelay: 300 * time.Millisecond,
		AllocationDelay: 30 * time.Millisecond, PowerDelay: 50 * time.Millisecond, Latency: 5 * time.Millisecond})
	testNoDoubleBooking(t, ir)
}

// TestNoDoubleBookingInstanceUUIDSim races 20 boots for 10 simulated nodes
// reserved the deprecated way, by writing the node's instance_uuid.
func TestNoDoubleBookingInstanceUUIDSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ir := SimIronic(t, sim.Options{DeployDelay: 300 * time.Millisecond, UndeployDelay: 300 * time.Millisecond,
		PowerDelay: 50 * time.Millisecond, Latency: 5 * time.Millisecond})
	testNoDoubleBooking(t, ir, "CORRAL_IRONIC_RESERVATION=instance_uuid")
}

// TestNoDoubleBookingRealIronic races 20 boots for 10 nodes of a real Ironic.
func TestNoDoubleBookingRealIronic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testNoDoubleBooking(t, RealIronic(t))
}

// testNoDoubleBooking boots twice as many servers as there are nodes, all
// at once through every agent: exactly one server per node must become
// ACTIVE, the rest ERROR with "No valid host", and corral's reservations
// and Ironic's allocations must agree. Deleting everything must leave
// nothing in Ironic. env is the agents' extra environment.
func testNoDoubleBooking(t *testing.T, ir *Ironic, env ...string) {
	const nodes, boots = 10, 20
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	class := ir.Class("race")
	nodeIDs := ir.EnrollNodes(t, nodes, class)
	c := IronicCluster(t, 3, ir, env...)
	byAllocation := !slices.Contains(env, "CORRAL_IRONIC_RESERVATION=instance_uuid")
	AwaitNodes(t, c.Agents[0], nodeIDs, 30*time.Second)
	flavor := BareMetalFlavor(t, c.Agents[2], "bm-race", class)
	t.Logf("%d nodes enrolled and mirrored, 3 agents up: %s", nodes, time.Since(began).Round(time.Millisecond))
	began = time.Now()

	ids := make([]string, boots)
	errs := make([]error, boots)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range boots {
		wg.Go(func() {
			cl := Compute(c.Agents[i%len(c.Agents)])
			<-start
			ids[i], errs[i] = Boot(ctx, cl, fmt.Sprintf("race-%02d", i), flavor)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	cl := Compute(c.Agents[1])
	got := WaitServers(t, cl, ids, 2*time.Minute, Settled)
	onNode := map[string]string{}
	var active, failed []string
	for _, id := range ids {
		s := got[id]
		switch s.Status {
		case "ACTIVE":
			active = append(active, id)
			if other, dup := onNode[s.HypervisorHostname]; dup {
				t.Fatalf("DOUBLE BOOKING: servers %s and %s are both ACTIVE on node %s", other, id, s.HypervisorHostname)
			}
			if !slices.Contains(nodeIDs, s.HypervisorHostname) {
				t.Fatalf("server %s on %q, not one of the enrolled nodes", id, s.HypervisorHostname)
			}
			onNode[s.HypervisorHostname] = id
		case "ERROR":
			failed = append(failed, id)
			if msg, err := FaultOf(s); err != nil || !strings.Contains(msg, "No valid host") {
				t.Errorf("server %s failed with %q (%v), want a No valid host fault", id, msg, err)
			}
		}
	}
	if len(active) != nodes || len(failed) != boots-nodes {
		var faults []string
		for _, id := range failed {
			faults = append(faults, got[id].Fault.Message)
		}
		t.Fatalf("%d ACTIVE and %d ERROR, want %d and %d; faults: %q", len(active), len(failed), nodes, boots-nodes, faults)
	}
	t.Logf("%d boots settled: %s", boots, time.Since(began).Round(time.Millisecond))
	checkReservations(ctx, t, c.Agents[0], onNode)

	// Ironic agrees: each node holds the server corral placed there (through
	// an allocation named by the server id, unless reserving by
	// instance_uuid), and nothing else is allocated.
	for node, srv := range onNode {
		n, err := ir.Node(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		if n.InstanceUUID != srv || n.ProvisionState != "active" {
			t.Errorf("Ironic node %s: instance_uuid %q state %s, corral placed %s there", node, n.InstanceUUID, n.ProvisionState, srv)
		}
	}
	allocs, err := ir.Allocations(ctx, class)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]int{true: nodes}[byAllocation]; len(allocs) != want {
		t.Errorf("Ironic has %d allocations of %s, want %d: %+v", len(allocs), class, want, allocs)
	}
	for _, a := range allocs {
		if a.State != "active" || onNode[a.NodeUUID] != a.UUID {
			t.Errorf("allocation %s (%s) on node %s, corral has %q there", a.UUID, a.State, a.NodeUUID, onNode[a.NodeUUID])
		}
	}

	// Delete everything, ERROR servers included, through every agent.
	began = time.Now()
	for i, id := range ids {
		if err := servers.Delete(ctx, Compute(c.Agents[i%len(c.Agents)]), id).ExtractErr(); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	WaitGone(t, cl, ids, 90*time.Second)
	t.Logf("%d deletes done: %s", boots, time.Since(began).Round(time.Millisecond))
	checkReservations(ctx, t, c.Agents[2], map[string]string{})
	if allocs, err := ir.Allocations(ctx, class); err != nil || len(allocs) != 0 {
		t.Errorf("allocations left in Ironic after deleting every server: %+v, %v", allocs, err)
	}
	for _, node := range nodeIDs {
		n, err := ir.Node(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		if n.InstanceUUID != "" || n.AllocationUUID != "" || n.ProvisionState != "available" {
			t.Errorf("node %s after deleting every server: state %s instance_uuid %q allocation %q",
				node, n.ProvisionState, n.InstanceUUID, n.AllocationUUID)
		}
	}
}
