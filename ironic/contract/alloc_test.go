package contract

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// testAllocationLifecycle: allocate -> deploy -> (delete refused) -> undeploy removes the allocation.
func testAllocationLifecycle(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("gold")
	ids := must(e.Enroll(ctx, NodeSpec{Name: e.Name("gold0"), ResourceClass: rc, Traits: []string{"CUSTOM_GPU"}})).get(t)
	id := ids[0]
	t.Cleanup(func() { e.Cleanup(context.Background(), []string{rc}, ids) })

	allocUUID := "cccccccc-0000-4000-8000-" + e.Prefix[2:] + "000001"
	name := e.Name("inst-1")
	created := must(allocations.Create(ctx, e.Client, allocations.CreateOpts{
		UUID: allocUUID, Name: name, ResourceClass: rc, Traits: []string{"CUSTOM_GPU"},
		Extra: map[string]string{"instance": "i-1"},
	}).Extract()).get(t)
	if created.UUID != allocUUID || created.State != "allocating" || created.NodeUUID != "" ||
		created.Extra["instance"] != "i-1" || !slices.Equal(created.Traits, []string{"CUSTOM_GPU"}) {
		t.Fatalf("created allocation: %+v", created)
	}
	// The client-chosen UUID is an idempotency key, and names are unique.
	again := allocations.Create(ctx, e.Client, allocations.CreateOpts{UUID: allocUUID, ResourceClass: rc})
	CheckFault(t, again.Err, http.StatusConflict, "An allocation with UUID "+allocUUID+" already exists.")
	sameName := allocations.Create(ctx, e.Client, allocations.CreateOpts{Name: name, ResourceClass: rc})
	CheckFault(t, sameName.Err, http.StatusConflict, "An allocation with name "+name+" already exists.")

	a := must(e.WaitAllocation(ctx, allocUUID)).get(t)
	if a.State != "active" || a.NodeUUID != id || a.LastError != "" {
		t.Fatalf("allocation: %+v", a)
	}
	if byName := must(allocations.Get(ctx, e.Client, name).Extract()).get(t); byName.UUID != allocUUID {
		t.Fatalf("allocation by name: %+v", byName)
	}
	n := must(nodes.Get(ctx, e.Client, id).Extract()).get(t)
	if n.AllocationUUID != allocUUID || n.InstanceUUID != allocUUID || n.ProvisionState != "available" {
		t.Fatalf("allocated node: allocation %q instance %q state %q", n.AllocationUUID, n.InstanceUUID, n.ProvisionState)
	}
	if tr, _ := n.InstanceInfo["traits"].([]any); len(tr) != 1 || tr[0] != "CUSTOM_GPU" {
		t.Fatalf("instance_info.traits = %v", n.InstanceInfo["traits"])
	}
	nodeAlloc := must(e.Do(ctx, http.MethodGet, "/v1/nodes/"+id+"/allocation", Microversion, nil)).get(t)
	if m := rawJSON(t, nodeAlloc); nodeAlloc.Status != http.StatusOK || m["uuid"] != allocUUID {
		t.Fatalf("node allocation: %d %v", nodeAlloc.Status, m)
	}
	byNode := must(allocations.List(e.Client, allocations.ListOpts{Node: id}).AllPages(ctx)).get(t)
	if list := must(allocations.ExtractAllocations(byNode)).get(t); len(list) != 1 || list[0].UUID != allocUUID {
		t.Fatalf("allocations by node: %+v", list)
	}

	// Deploy.
	n = must(nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/image_source", Value: "http://127.0.0.1/img.qcow2"},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/root_gb", Value: "100"},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_info/capabilities", Value: map[string]any{"boot_mode": "uefi"}},
	}).Extract()).get(t)
	if n.InstanceInfo["image_source"] != "http://127.0.0.1/img.qcow2" {
		t.Fatalf("instance_info after patch: %v", n.InstanceInfo)
	}
	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, id, nodes.ProvisionStateOpts{
		Target: nodes.TargetActive, ConfigDrive: nodes.ConfigDrive{MetaData: map[string]any{"hostname": "vm-1"}},
	}).ExtractErr())
	n = must(e.WaitNode(ctx, id, func(n *nodes.Node) bool { return n.ProvisionState == "active" })).get(t)
	if n.InstanceInfo["image_type"] != "whole-disk" || n.InstanceInfo["configdrive"] != "******" ||
		n.PowerState != "power off" || n.InstanceUUID != allocUUID {
		t.Fatalf("deployed node: power %q instance_info %v", n.PowerState, n.InstanceInfo)
	}

	// An active node keeps its allocation.
	err := allocations.Delete(ctx, e.Client, allocUUID).ExtractErr()
	CheckFault(t, err, http.StatusConflict, fmt.Sprintf("Cannot remove allocation %s for node %s, because the node is "+
		"active (and maintenance mode is off)", allocUUID, id))
	// And cannot be re-reserved the old way.
	_, err = nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_uuid", Value: "dddddddd-0000-4000-8000-000000000001"}}).Extract()
	CheckFault(t, err, http.StatusConflict, fmt.Sprintf("Node %s is associated with instance %s.", id, allocUUID))

	// Undeploy: the allocation goes away with the instance.
	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, id, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted}).ExtractErr())
	n = must(e.WaitNode(ctx, id, func(n *nodes.Node) bool { return n.ProvisionState == "available" })).get(t)
	if n.InstanceUUID != "" || n.AllocationUUID != "" || len(n.InstanceInfo) != 0 || n.PowerState != "power off" {
		t.Fatalf("undeployed node: instance %q allocation %q instance_info %v power %q",
			n.InstanceUUID, n.AllocationUUID, n.InstanceInfo, n.PowerState)
	}
	CheckFault(t, allocations.Get(ctx, e.Client, allocUUID).Err, http.StatusNotFound,
		"Allocation "+allocUUID+" could not be found.")
	gone := must(e.Do(ctx, http.MethodGet, "/v1/nodes/"+id+"/allocation", Microversion, nil)).get(t)
	if gone.Status != http.StatusNotFound || Fault(gone.Body) != "Allocation for node "+id+" was not found" {
		t.Fatalf("node allocation after undeploy: %d %q", gone.Status, gone.Body)
	}
}

// testAllocationErrors: request validation and the "no match" failure.
func testAllocationErrors(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("none")
	t.Cleanup(func() { e.Cleanup(context.Background(), []string{rc}, nil) })
	post := func(body map[string]any) *Raw {
		return must(e.Do(ctx, http.MethodPost, "/v1/allocations", Microversion, body)).get(t)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		msg    string
	}{
		{map[string]any{"name": "Alloc_Inst 1", "resource_class": rc}, 400, "Cannot create allocation with invalid name 'Alloc_Inst 1'"},
		{map[string]any{"name": e.Name("no-rc")}, 400, "The resource_class field is mandatory when not backfilling"},
		{map[string]any{"resource_class": rc, "traits": []string{"gpu"}}, 400, "Schema error for allocation: 'gpu' is not valid " +
			"under any of the given schemas. Possible root cause: 'gpu' does not match '^CUSTOM_[A-Z0-9_]+$'"},
		{map[string]any{"resource_class": rc, "bogus": 1}, 400,
			"Schema error for allocation: Additional properties are not allowed ('bogus' was unexpected)"},
		{map[string]any{"resource_class": rc, "uuid": "xyz"}, 400, "Expected UUID for uuid: xyz"},
		{map[string]any{"resource_class": rc, "candidate_nodes": []string{e.Name("ghost")}}, 400,
			"Nodes cannot be found: " + e.Name("ghost")},
		{map[string]any{"resource_class": rc, "node": e.Name("ghost")}, 400, "Node " + e.Name("ghost") + " could not be found."},
	} {
		r := post(tc.body)
		if r.Status != tc.status || Fault(r.Body) != tc.msg {
			t.Errorf("POST %v: %d %q, want %d %q", tc.body, r.Status, Fault(r.Body), tc.status, tc.msg)
		}
	}
	old := must(e.Do(ctx, http.MethodPost, "/v1/allocations", "1.57", map[string]any{"resource_class": rc, "node": "x"})).get(t)
	if old.Status != 400 || Fault(old.Body) != "Cannot set node when creating an allocation in this API version" {
		t.Errorf("backfill at 1.57: %d %q", old.Status, old.Body)
	}

	// No node has this resource class: accepted, then failed asynchronously.
	a := must(allocations.Create(ctx, e.Client, allocations.CreateOpts{Name: e.Name("nomatch"), ResourceClass: rc}).Extract()).get(t)
	if a.State != "allocating" {
		t.Fatalf("created: %+v", a)
	}
	a = must(e.WaitAllocation(ctx, a.UUID)).get(t)
	want := fmt.Sprintf("Failed to process allocation %s: no available nodes match the resource class %s.", a.UUID, rc)
	if a.State != "error" || a.LastError != want || a.NodeUUID != "" {
		t.Fatalf("no-match allocation: %s %q, want %q", a.State, a.LastError, want)
	}
	errs := must(allocations.List(e.Client, allocations.ListOpts{ResourceClass: rc, State: "error"}).AllPages(ctx)).get(t)
	if list := must(allocations.ExtractAllocations(errs)).get(t); len(list) != 1 || list[0].UUID != a.UUID {
		t.Fatalf("error allocations of %s: %+v", rc, list)
	}
	noErr(t, allocations.Delete(ctx, e.Client, e.Name("nomatch")).ExtractErr())
	CheckFault(t, allocations.Delete(ctx, e.Client, a.UUID).ExtractErr(), http.StatusNotFound,
		"Allocation "+a.UUID+" could not be found.")
}

// testAllocationMatching: traits, candidate nodes, release before deploy, and a race for one node.
func testAllocationMatching(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("silver")
	ids := must(e.Enroll(ctx,
		NodeSpec{Name: e.Name("silver0"), ResourceClass: rc, Traits: []string{"CUSTOM_GPU"}},
		NodeSpec{Name: e.Name("silver1"), ResourceClass: rc})).get(t)
	t.Cleanup(func() { e.Cleanup(context.Background(), []string{rc}, ids) })

	create := func(opts allocations.CreateOpts) *allocations.Allocation {
		t.Helper()
		a := must(allocations.Create(ctx, e.Client, opts).Extract()).get(t)
		return must(e.WaitAllocation(ctx, a.UUID)).get(t)
	}
	failed := func(a *allocations.Allocation, reason string) {
		t.Helper()
		want := fmt.Sprintf("Failed to process allocation %s: %s.", a.UUID, reason)
		if a.State != "error" || a.LastError != want {
			t.Fatalf("allocation %s: %s %q, want error %q", a.Name, a.State, a.LastError, want)
		}
	}

	a := create(allocations.CreateOpts{ResourceClass: rc, Traits: []string{"CUSTOM_NOPE"}})
	failed(a, "no suitable nodes have the requested traits CUSTOM_NOPE")

	// The trait selects silver0 among the two.
	gpu := create(allocations.CreateOpts{ResourceClass: rc, Traits: []string{"CUSTOM_GPU"}})
	if gpu.State != "active" || gpu.NodeUUID != ids[0] {
		t.Fatalf("gpu allocation: %+v", gpu)
	}
	// silver0 is taken: asking for it by candidate fails.
	a = create(allocations.CreateOpts{ResourceClass: rc, CandidateNodes: []string{ids[0]}})
	failed(a, "none of the requested nodes are available and match the resource class "+rc)
	// Release before deploy: 204, the node is free again (instance_info keeps the traits).
	noErr(t, allocations.Delete(ctx, e.Client, gpu.UUID).ExtractErr())
	n := must(nodes.Get(ctx, e.Client, ids[0]).Extract()).get(t)
	if n.InstanceUUID != "" || n.AllocationUUID != "" {
		t.Fatalf("released node: instance %q allocation %q", n.InstanceUUID, n.AllocationUUID)
	}
	if tr, ok := n.InstanceInfo["traits"].([]any); !ok || len(tr) != 1 {
		t.Fatalf("released node instance_info = %v, want leftover traits", n.InstanceInfo)
	}

	// Candidate by name.
	byName := create(allocations.CreateOpts{Name: e.Name("by-name"), ResourceClass: rc, CandidateNodes: []string{e.Name("silver1")}})
	if byName.State != "active" || byName.NodeUUID != ids[1] || !slices.Equal(byName.CandidateNodes, []string{ids[1]}) {
		t.Fatalf("candidate by name: %+v", byName)
	}
	noErr(t, allocations.Delete(ctx, e.Client, byName.UUID).ExtractErr())

	// Two concurrent allocations for one candidate: exactly one wins, never both.
	var wg sync.WaitGroup
	created := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			a, err := allocations.Create(ctx, e.Client, allocations.CreateOpts{
				Name: e.Name(fmt.Sprintf("race-%d", i)), ResourceClass: rc, CandidateNodes: []string{ids[1]},
			}).Extract()
			errs[i] = err
			if err == nil {
				created[i] = a.UUID
			}
		})
	}
	wg.Wait()
	var active, lost int
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("race create %d: %v", i, errs[i])
		}
		a := must(e.WaitAllocation(ctx, created[i])).get(t)
		switch a.State {
		case "active":
			active++
			if a.NodeUUID != ids[1] {
				t.Fatalf("race winner on %s", a.NodeUUID)
			}
		case "error":
			lost++
			all := fmt.Sprintf("Failed to process allocation %s: all nodes were filtered out during reservation.", a.UUID)
			none := fmt.Sprintf("Failed to process allocation %s: none of the requested nodes are available and match "+
				"the resource class %s.", a.UUID, rc)
			if a.LastError != all && a.LastError != none {
				t.Fatalf("race loser: %q", a.LastError)
			}
		}
	}
	if active != 1 || lost != 1 {
		t.Fatalf("race: %d active, %d lost", active, lost)
	}
	n = must(nodes.Get(ctx, e.Client, ids[1]).Extract()).get(t)
	if !slices.Contains(created, n.AllocationUUID) || n.InstanceUUID != n.AllocationUUID {
		t.Fatalf("raced node: allocation %q instance %q", n.AllocationUUID, n.InstanceUUID)
	}
}
