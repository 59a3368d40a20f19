package contract

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// testFlatVIFs: a node of the flat network interface gives each VIF one of its free ports; a VIF
// beyond them is refused (400), the same VIF twice is a conflict (409), the list shows the VIFs
// attached, a detach frees the port, a detach of a VIF not attached is refused (400). An Ironic
// that does not enable flat refuses the node with the interfaces it has, and the rest is not run
// (it logs so). The VIF ids are made up: a real Ironic with flat would ask Neutron for them, so
// against a real Ironic only the refusal is held.
func testFlatVIFs(t *testing.T, e *Env) {
	ctx := ctxFor(t)
	rc := e.Name("flat")
	ids, err := e.Enroll(ctx, NodeSpec{Name: e.Name("flat0"), ResourceClass: rc, NetworkInterface: "flat"})
	if err != nil {
		const refusal = "Could not find the following interface in the 'ironic.hardware.interfaces.network' entrypoint: flat. Valid interfaces are ["
		if !strings.Contains(err.Error(), refusal) {
			t.Fatalf("enrolling a flat node: %v", err)
		}
		t.Logf("this Ironic does not enable the flat network interface and refuses the node as Ironic does; the flat VIF cases run where it does (TestContractSimFlat): %v", err)
		return
	}
	id := ids[0]
	t.Cleanup(func() { e.Cleanup(context.Background(), nil, ids) })
	if e.Real {
		t.Skip("A REAL IRONIC WITH FLAT ASKS NEUTRON FOR EVERY VIF: the flat VIF cases need Neutron ports and are not run against it here")
	}
	for range 2 {
		must(ports.Create(ctx, e.Client, ports.CreateOpts{NodeUUID: id, Address: e.MAC(), PhysicalNetwork: "physnet1"}).Extract()).get(t)
	}
	vif := func(i int) string { return "cccccccc-0000-4000-8000-" + e.Prefix[2:] + "00000" + string(rune('0'+i)) }
	attach := func(v string) error {
		return nodes.AttachVirtualInterface(ctx, e.Client, id, nodes.VirtualInterfaceOpts{ID: v}).ExtractErr()
	}
	listed := func() []string {
		var out []string
		for _, v := range must(nodes.ListVirtualInterfaces(ctx, e.Client, id).Extract()).get(t) {
			out = append(out, v.ID)
		}
		slices.Sort(out)
		return out
	}
	noErr(t, attach(vif(1)))
	noErr(t, attach(vif(2)))
	CheckFault(t, attach(vif(3)), http.StatusBadRequest, "Unable to attach VIF "+vif(3)+", not enough free physical ports.")
	if err := attach(vif(1)); err == nil || !strings.Contains(err.Error(), "already attached to Ironic Port") {
		t.Fatalf("the same VIF twice: %v", err)
	}
	if got := listed(); !slices.Equal(got, []string{vif(1), vif(2)}) {
		t.Fatalf("vifs %v, want %s and %s", got, vif(1), vif(2))
	}
	noErr(t, nodes.DetachVirtualInterface(ctx, e.Client, id, vif(1)).ExtractErr())
	noErr(t, attach(vif(3)))
	if got := listed(); !slices.Equal(got, []string{vif(2), vif(3)}) {
		t.Fatalf("vifs %v after a detach and an attach", got)
	}
	CheckFault(t, nodes.DetachVirtualInterface(ctx, e.Client, id, vif(1)).ExtractErr(), http.StatusBadRequest,
		"Unable to detach VIF "+vif(1)+" from node "+id+" because it is not attached to it.")
}
