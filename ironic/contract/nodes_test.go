package contract

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/allocations"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// testLifecycle: enroll -> manage -> provide -> power off -> available, checking every step.
func testLifecycle(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("life")
	n := must(nodes.Create(ctx, e.Client, nodes.CreateOpts{
		Name: e.Name("life0"), Driver: "fake-hardware", ResourceClass: rc,
		Properties: map[string]any{"cpus": 32, "memory_mb": 262144, "local_gb": 1000,
			"capabilities": "boot_mode:uefi,has_gpu:true"},
	}).Extract()).get(t)
	t.Cleanup(func() { e.Cleanup(context.Background(), nil, []string{n.UUID}) })
	if n.ProvisionState != "enroll" || n.PowerState != "" || n.ResourceClass != rc ||
		n.Properties["capabilities"] != "boot_mode:uefi,has_gpu:true" || len(n.Traits) != 0 {
		t.Fatalf("created node: %+v", n)
	}
	dup := nodes.Create(ctx, e.Client, nodes.CreateOpts{Name: e.Name("life0"), Driver: "fake-hardware"})
	CheckFault(t, dup.Err, http.StatusConflict, "A node with name "+e.Name("life0")+" already exists.")

	// provide is not possible from enroll.
	err := nodes.ChangeProvisionState(ctx, e.Client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetProvide}).ExtractErr()
	CheckFault(t, err, http.StatusBadRequest,
		fmt.Sprintf(`The requested action "provide" can not be performed on node "%s" while it is in state "enroll".`, n.UUID))

	noErr(t, e.PutTraits(ctx, n.UUID, []string{"HW_CPU_X86_AVX2", "CUSTOM_GPU"}))
	CheckFault(t, e.PutTraits(ctx, n.UUID, []string{"gpu"}), http.StatusBadRequest,
		"Schema error for body: 'gpu' is not valid under any of the given schemas. "+
			"Possible root cause: 'gpu' does not match '^CUSTOM_[A-Z0-9_]+$'")

	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetManage}).ExtractErr())
	got := must(e.WaitNode(ctx, n.UUID, func(n *nodes.Node) bool { return n.ProvisionState == "manageable" })).get(t)
	if got.PowerState != "" {
		t.Fatalf("power_state after manage = %q, want null", got.PowerState)
	}
	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetProvide}).ExtractErr())
	got = must(e.WaitNode(ctx, n.UUID, func(n *nodes.Node) bool { return n.ProvisionState == "available" })).get(t)
	if got.PowerState != "" {
		t.Fatalf("power_state after provide = %q, want null (fake power starts unknown)", got.PowerState)
	}
	noErr(t, nodes.ChangePowerState(ctx, e.Client, n.UUID, nodes.PowerStateOpts{Target: nodes.PowerOff}).ExtractErr())
	got = must(e.WaitNode(ctx, n.UUID, func(n *nodes.Node) bool { return n.PowerState == "power off" })).get(t)
	if got.ProvisionState != "available" || !slices.Equal(got.Traits, []string{"CUSTOM_GPU", "HW_CPU_X86_AVX2"}) {
		t.Fatalf("ready node: state %q traits %v", got.ProvisionState, got.Traits)
	}
	bad := nodes.ChangePowerState(ctx, e.Client, n.UUID, nodes.PowerStateOpts{Target: "reboot"})
	CheckFault(t, bad.Err, http.StatusBadRequest,
		fmt.Sprintf(`The requested action "reboot" can not be performed on node "%s" while it is in state "power off".`, n.UUID))

	// Deploy without allocation or image: fake-hardware deploys anything.
	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetActive}).ExtractErr())
	got = must(e.WaitNode(ctx, n.UUID, func(n *nodes.Node) bool { return n.ProvisionState == "active" })).get(t)
	if got.InstanceUUID != "" || got.AllocationUUID != "" || len(got.InstanceInfo) != 0 {
		t.Fatalf("bare deploy: %+v", got)
	}
	err = nodes.Delete(ctx, e.Client, n.UUID).ExtractErr()
	CheckFault(t, err, http.StatusConflict, fmt.Sprintf(`Can not delete node "%s" while it is in provision state "active". `+
		`Valid provision states to perform deletion are: "('manageable', 'enroll', 'adopt failed', 'available')", `+
		`or set the node into maintenance mode`, n.UUID))
	noErr(t, nodes.ChangeProvisionState(ctx, e.Client, n.UUID, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted}).ExtractErr())
	must(e.WaitNode(ctx, n.UUID, func(n *nodes.Node) bool { return n.ProvisionState == "available" })).get(t)
	noErr(t, nodes.Delete(ctx, e.Client, n.UUID).ExtractErr())
	CheckFault(t, nodes.Get(ctx, e.Client, n.UUID).Err, http.StatusNotFound, "Node "+n.UUID+" could not be found.")
}

// testPowerNullAndOldReservation: allocations skip nodes whose power state is unknown; the
// pre-allocation reservation by PATCH instance_uuid is fenced with 409.
func testPowerNullAndOldReservation(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("resv")
	ids := must(e.Enroll(ctx, NodeSpec{Name: e.Name("resv0"), ResourceClass: rc, SkipPowerOff: true})).get(t)
	id := ids[0]
	t.Cleanup(func() { e.Cleanup(context.Background(), []string{rc}, ids) })

	a := must(allocations.Create(ctx, e.Client, allocations.CreateOpts{
		Name: e.Name("resv-a"), ResourceClass: rc, CandidateNodes: []string{id}}).Extract()).get(t)
	a = must(e.WaitAllocation(ctx, a.UUID)).get(t)
	want := fmt.Sprintf("Failed to process allocation %s: none of the requested nodes are available and match "+
		"the resource class %s.", a.UUID, rc)
	if a.State != "error" || a.LastError != want || a.NodeUUID != "" {
		t.Fatalf("allocation on power-null node: %s %q, want error %q", a.State, a.LastError, want)
	}
	noErr(t, allocations.Delete(ctx, e.Client, a.UUID).ExtractErr())

	noErr(t, nodes.ChangePowerState(ctx, e.Client, id, nodes.PowerStateOpts{Target: nodes.PowerOff}).ExtractErr())
	must(e.WaitNode(ctx, id, func(n *nodes.Node) bool { return n.PowerState == "power off" })).get(t)

	inst1, inst2 := "aaaaaaaa-0000-4000-8000-"+e.Prefix[2:]+"000001", "aaaaaaaa-0000-4000-8000-"+e.Prefix[2:]+"000002"
	set := func(v string) (*nodes.Node, error) {
		return nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
			nodes.UpdateOperation{Op: nodes.AddOp, Path: "/instance_uuid", Value: v}}).Extract()
	}
	n := must(set(inst1)).get(t)
	if n.InstanceUUID != inst1 {
		t.Fatalf("instance_uuid = %q", n.InstanceUUID)
	}
	_, err := set(inst2)
	CheckFault(t, err, http.StatusConflict, fmt.Sprintf("Node %s is associated with instance %s.", id, inst1))
	if n := must(set(inst1)).get(t); n.InstanceUUID != inst1 {
		t.Fatalf("same instance_uuid again: %q", n.InstanceUUID)
	}
	_, err = set("not-a-uuid")
	CheckFault(t, err, http.StatusBadRequest, "Expected UUID for instance_uuid: not-a-uuid")

	// A reserved node is not allocatable.
	a = must(allocations.Create(ctx, e.Client, allocations.CreateOpts{ResourceClass: rc}).Extract()).get(t)
	a = must(e.WaitAllocation(ctx, a.UUID)).get(t)
	if want := fmt.Sprintf("Failed to process allocation %s: no available nodes match the resource class %s.",
		a.UUID, rc); a.State != "error" || a.LastError != want {
		t.Fatalf("allocation on reserved node: %s %q", a.State, a.LastError)
	}
	// A node deletion is fenced too.
	CheckFault(t, nodes.Delete(ctx, e.Client, id).ExtractErr(), http.StatusConflict,
		fmt.Sprintf("Node %s is associated with instance %s.", id, inst1))

	n = must(nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.RemoveOp, Path: "/instance_uuid"}}).Extract()).get(t)
	if n.InstanceUUID != "" {
		t.Fatalf("instance_uuid after remove = %q", n.InstanceUUID)
	}
	_, err = nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/extra/nope", Value: 1}}).Extract()
	CheckFault(t, err, http.StatusBadRequest,
		"Couldn't apply patch '{'op': 'replace', 'path': '/extra/nope', 'value': 1}'. Reason: can't replace a non-existent object 'nope'")
	_, err = nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/bogus", Value: "x"}}).Extract()
	if code, msg := StatusOf(err); code != http.StatusBadRequest || !strings.HasPrefix(msg, "Cannot patch /bogus. Only the following can be updated: ") {
		t.Fatalf("patch /bogus: %d %q", code, msg)
	}
	n = must(nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/extra/owner", Value: "corral"},
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/maintenance", Value: true},
	}).Extract()).get(t)
	if n.Extra["owner"] != "corral" || !n.Maintenance {
		t.Fatalf("patched node: extra %v maintenance %v", n.Extra, n.Maintenance)
	}
	list := listRaw(t, e, "/v1/nodes?fields=uuid&maintenance=true&resource_class="+url.QueryEscape(rc))
	if len(list) != 1 || list[0]["uuid"] != id {
		t.Fatalf("maintenance filter: %v", list)
	}
	n = must(nodes.Update(ctx, e.Client, id, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/maintenance", Value: false}}).Extract()).get(t)
	if n.Maintenance {
		t.Fatal("maintenance still on")
	}
}

func testPortsAndVIFs(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("net")
	ids := must(e.Enroll(ctx, NodeSpec{Name: e.Name("net0"), ResourceClass: rc})).get(t)
	id := ids[0]
	t.Cleanup(func() { e.Cleanup(context.Background(), nil, ids) })

	mac := e.MAC()
	pxe := true
	p := must(ports.Create(ctx, e.Client, ports.CreateOpts{
		NodeUUID: id, Address: strings.ToUpper(mac), PXEEnabled: &pxe, PhysicalNetwork: "physnet1",
		LocalLinkConnection: map[string]any{"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "Ethernet3/1", "switch_info": "sw1"},
		Extra:               map[string]any{"vnic_type": "baremetal"},
	}).Extract()).get(t)
	if p.Address != mac || p.NodeUUID != id || !p.PXEEnabled || p.PhysicalNetwork != "physnet1" ||
		p.LocalLinkConnection["port_id"] != "Ethernet3/1" || p.Extra["vnic_type"] != "baremetal" {
		t.Fatalf("port: %+v", p)
	}
	dup := ports.Create(ctx, e.Client, ports.CreateOpts{NodeUUID: id, Address: mac})
	CheckFault(t, dup.Err, http.StatusConflict, "A port with MAC address "+mac+" already exists.")
	badMAC := ports.Create(ctx, e.Client, ports.CreateOpts{NodeUUID: id, Address: "zz"})
	CheckFault(t, badMAC.Err, http.StatusBadRequest, "Expected valid MAC address for address: zz")

	for _, opts := range []ports.ListOpts{{Node: e.Name("net0")}, {NodeUUID: id}, {Address: mac}} {
		pages := must(ports.List(e.Client, opts).AllPages(ctx)).get(t)
		list := must(ports.ExtractPorts(pages)).get(t)
		if len(list) != 1 || list[0].UUID != p.UUID || list[0].Address != mac || list[0].NodeUUID != "" {
			t.Fatalf("ports list %+v: %+v", opts, list)
		}
	}
	detail := must(ports.ListDetail(e.Client, ports.ListOpts{Node: id}).AllPages(ctx)).get(t)
	if list := must(ports.ExtractPorts(detail)).get(t); len(list) != 1 || list[0].NodeUUID != id {
		t.Fatalf("ports detail: %+v", list)
	}
	if got := must(ports.Get(ctx, e.Client, p.UUID).Extract()).get(t); got.Address != mac {
		t.Fatalf("port get: %+v", got)
	}

	// With the noop network interface, VIF attach and detach succeed and record nothing.
	vif := "bbbbbbbb-0000-4000-8000-" + e.Prefix[2:] + "000001"
	noErr(t, nodes.AttachVirtualInterface(ctx, e.Client, id, nodes.VirtualInterfaceOpts{ID: vif}).ExtractErr())
	vifs := must(nodes.ListVirtualInterfaces(ctx, e.Client, id).Extract()).get(t)
	if len(vifs) != 0 {
		t.Fatalf("vifs after attach with noop network: %+v", vifs)
	}
	noErr(t, nodes.DetachVirtualInterface(ctx, e.Client, id, vif).ExtractErr())
	noErr(t, nodes.DetachVirtualInterface(ctx, e.Client, id, "never-attached").ExtractErr())
	noID := must(e.Do(ctx, http.MethodPost, "/v1/nodes/"+id+"/vifs", Microversion, map[string]any{})).get(t)
	if noID.Status != http.StatusBadRequest || Fault(noID.Body) != "Schema error for vif: 'id' is a required property" {
		t.Fatalf("vif without id: %d %q", noID.Status, noID.Body)
	}

	noErr(t, ports.Delete(ctx, e.Client, p.UUID).ExtractErr())
	CheckFault(t, ports.Get(ctx, e.Client, p.UUID).Err, http.StatusNotFound, "Port "+p.UUID+" could not be found.")
	// Deleting a node deletes its ports.
	p2 := must(ports.Create(ctx, e.Client, ports.CreateOpts{NodeUUID: id, Address: e.MAC()}).Extract()).get(t)
	noErr(t, nodes.Delete(ctx, e.Client, id).ExtractErr())
	CheckFault(t, ports.Get(ctx, e.Client, p2.UUID).Err, http.StatusNotFound, "Port "+p2.UUID+" could not be found.")
}

// listRaw GETs a list path and returns its items.
func listRaw(t *testing.T, e *Env, path string) []map[string]any {
	t.Helper()
	r := must(e.Do(context.Background(), http.MethodGet, path, Microversion, nil)).get(t)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %q", path, r.Status, r.Body)
	}
	m := rawJSON(t, r)
	for _, k := range []string{"nodes", "ports", "allocations"} {
		if items, ok := m[k].([]any); ok {
			out := make([]map[string]any, len(items))
			for i, it := range items {
				out[i], _ = it.(map[string]any)
			}
			return out
		}
	}
	t.Fatalf("GET %s: no list in %q", path, r.Body)
	return nil
}

// testListPaging: limit=2 pages carry a next link with limit and marker; the link keeps only some
// filters (not resource_class), so a client re-applies its filters to the marker.
func testListPaging(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("page")
	var specs []NodeSpec
	for i := range 5 {
		specs = append(specs, NodeSpec{Name: e.Name(fmt.Sprintf("page%d", i)), ResourceClass: rc})
	}
	ids := must(e.Enroll(ctx, specs...)).get(t)
	t.Cleanup(func() { e.Cleanup(context.Background(), nil, ids) })

	var seen []string
	marker := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("too many pages: %v", seen)
		}
		path := "/v1/nodes?limit=2&fields=uuid,name&resource_class=" + url.QueryEscape(rc)
		if marker != "" {
			path += "&marker=" + marker
		}
		r := must(e.Do(ctx, http.MethodGet, path, Microversion, nil)).get(t)
		m := rawJSON(t, r)
		items, _ := m["nodes"].([]any)
		for _, it := range items {
			n, _ := it.(map[string]any)
			if len(n) != 3 || n["links"] == nil {
				t.Fatalf("fields=uuid,name item: %v", n)
			}
			seen = append(seen, n["uuid"].(string))
		}
		next, _ := m["next"].(string)
		if len(items) < 2 {
			if next != "" {
				t.Fatalf("short page with next %q", next)
			}
			break
		}
		last := seen[len(seen)-1]
		want := e.Root + "/v1/nodes?sort_key=id&sort_dir=asc&fields=uuid,name&limit=2&marker=" + last
		if next != want {
			t.Fatalf("next = %q, want %q", next, want)
		}
		marker = last
	}
	if !slices.Equal(seen, ids) {
		t.Fatalf("paged %v, want %v (creation order)", seen, ids)
	}

	list := listRaw(t, e, "/v1/nodes/detail?limit=2&resource_class="+url.QueryEscape(rc))
	if len(list) != 2 || list[0]["resource_class"] != rc || list[0]["uuid"] != ids[0] {
		t.Fatalf("detail page: %v", list)
	}
	notUUID := must(e.Do(ctx, http.MethodGet, "/v1/nodes?marker=nope", Microversion, nil)).get(t)
	if notUUID.Status != http.StatusBadRequest || Fault(notUUID.Body) != "Expected UUID for marker: nope" {
		t.Fatalf("marker=nope: %d %q", notUUID.Status, notUUID.Body)
	}
	pstate := must(e.Do(ctx, http.MethodGet, "/v1/nodes?provision_state=bogus", Microversion, nil)).get(t)
	if pstate.Status != http.StatusBadRequest || Fault(pstate.Body) != `Provision state "bogus" is not valid` {
		t.Fatalf("provision_state=bogus: %d %q", pstate.Status, pstate.Body)
	}
	av := listRaw(t, e, "/v1/nodes?fields=uuid&provision_state=available&associated=false&resource_class="+url.QueryEscape(rc))
	if len(av) != len(ids) {
		t.Fatalf("available unassociated: %v", av)
	}
}
