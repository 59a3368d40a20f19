package novabm_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
	"github.com/corral-dev/corral/wire"
)

func planOf(t *testing.T, d novabmtest.Deployment, o novabm.Options) novabm.Plan {
	t.Helper()
	bmURL, novaURL := writeFixture(t, d)
	bm, nv, err := read(t, bmURL, novaURL)
	if err != nil {
		t.Fatal(err)
	}
	p := novabm.BuildPlan(bm, nv, o)
	if again := novabm.BuildPlan(bm, nv, o); !reflect.DeepEqual(p, again) {
		t.Fatal("two plans of the same databases differ")
	}
	return p
}

func TestPlanRealistic(t *testing.T) {
	const newKernel, newRamdisk = "ironic-kernel", "ironic-ramdisk"
	p := planOf(t, novabmtest.Realistic(2, 3), novabm.Options{ResourceClass: "baremetal-small",
		CorralFlavors: map[string]map[string]string{novabmtest.FlavorBM: {novabm.SpecDeployKernel: newKernel, novabm.SpecDeployRamdisk: newRamdisk}}})
	if len(p.Nodes) != 5 || p.Deployed() != 3 || len(p.Skipped) != 0 || len(p.Notes) != 0 {
		t.Fatalf("plan: %d nodes, %d deployed, skipped %+v, notes %v", len(p.Nodes), p.Deployed(), p.Skipped, p.Notes)
	}
	free, dep := p.Nodes[0], p.Nodes[4]
	if free.Instance != nil || free.UUID != novabmtest.NodeUUID(1) || free.ResourceClass != "baremetal-small" || free.Driver != "ipmi" {
		t.Fatalf("free node: %+v", free)
	}
	di := free.DriverInfo
	if di["ipmi_address"] != "10.0.0.2" || di["ipmi_username"] != "admin" || di["ipmi_password"] != "secret" ||
		di["ipmi_terminal_port"] != int64(8001) || di["deploy_kernel"] != newKernel || di["deploy_ramdisk"] != newRamdisk {
		t.Fatalf("driver_info of a free node: %v", di)
	}
	if len(free.Ports) != 2 || free.Ports[0].Extra["vif_uuid"] != "vif-1-1" || free.Ports[0].Address != novabmtest.MAC(1, 1) {
		t.Fatalf("ports: %+v", free.Ports)
	}
	in := dep.Instance
	if in == nil || in.UUID != novabmtest.InstanceUUID(3) || in.Name != "db-3" || in.ProjectID != "proj-1" || in.UserID != "user-1" {
		t.Fatalf("deployed node: %+v / %+v", dep, in)
	}
	if in.InstanceInfo["image_source"] != "http://127.0.0.1:1/images/app-3.qcow2" || in.InstanceInfo["root_gb"] != int64(100) {
		t.Fatalf("instance_info: %v", in.InstanceInfo)
	}
	f := in.Flavor
	if f.ID != novabmtest.FlavorBM || f.VCPUs != 16 || f.ExtraSpecs["resources:CUSTOM_BAREMETAL_SMALL"] != "1" ||
		f.ExtraSpecs["resources:VCPU"] != "0" || f.ExtraSpecs[novabm.SpecDeployKernel] != newKernel || f.ExtraSpecs["cpu_arch"] != "x86_64" {
		t.Fatalf("embedded flavor: %+v", f)
	}
}

func skipReasons(p novabm.Plan) map[string]string {
	out := map[string]string{}
	for _, s := range p.Skipped {
		out[s.Kind+" "+s.ID] = s.Reason
	}
	return out
}

func TestPlanSkipsWhatCannotBeMigrated(t *testing.T) {
	d := novabmtest.Realistic(3, 4)                           // nodes 1-3 free, 4-7 deployed (instances 1-4)
	d.Nodes[0].PMAddress = ""                                 // free node without pm_address
	d.Nodes[4].PMAddress = ""                                 // deployed node without pm_address: its instance too
	d.Nodes[2].Ifaces[1].MAC = novabmtest.MAC(2, 1)           // node 3 repeats node 2's MAC
	d.Instances[3].Node = novabmtest.NodeUUID(999)            // instance 4: its node row is gone...
	d.Nodes[6].InstanceUUID, d.Nodes[6].InstanceName = "", "" // ...and node 7 no longer names it
	d.Instances = append(d.Instances, novabmtest.Instance{UUID: novabmtest.InstanceUUID(50), Name: "on-deleted",
		Host: novabmtest.ComputeHost, Node: novabmtest.NodeUUID(8), VMState: "active", ImageRef: "img", TypeID: 1})
	d.Instances[0].VMState = "building" // instance 1 on node 4
	p := planOf(t, d, novabm.Options{DeployKernel: "k", DeployRamdisk: "r"})
	got := skipReasons(p)
	want := map[string]string{
		"node 1":                                 "no pm_address",
		"node 2":                                 "duplicate MAC " + novabmtest.MAC(2, 1),
		"node 3":                                 "duplicate MAC " + novabmtest.MAC(2, 1),
		"node 4":                                 `vm_state is "building"`,
		"node 5":                                 "no pm_address",
		"instance " + novabmtest.InstanceUUID(1): `vm_state is "building"`,
		"instance " + novabmtest.InstanceUUID(2): "no pm_address",
		"instance " + novabmtest.InstanceUUID(4): "node row is gone",
		"instance " + novabmtest.InstanceUUID(50): "soft-deleted",
	}
	for k, frag := range want {
		if !strings.Contains(got[k], frag) {
			t.Errorf("%s: reason %q, want it to say %q", k, got[k], frag)
		}
	}
	if len(got) != len(want) {
		t.Errorf("skipped %v, want exactly %d rows", got, len(want))
	}
	// What is left: node 6 (instance 3) deployed, node 7 free.
	if len(p.Nodes) != 2 || p.Nodes[0].BMID != 6 || p.Nodes[0].Instance == nil || p.Nodes[1].BMID != 7 || p.Nodes[1].Instance != nil {
		t.Fatalf("planned nodes: %+v", p.Nodes)
	}
}

func TestPlanNodeNamingUnknownInstanceIsSkipped(t *testing.T) {
	d := novabmtest.Realistic(1, 1)
	d.Instances = d.Instances[1:] // nova lost instance 1, bm node 2 still names it
	p := planOf(t, d, novabm.Options{})
	if r := skipReasons(p)["node 2"]; !strings.Contains(r, "nova does not have") {
		t.Fatalf("node 2: %q (skipped %v)", r, p.Skipped)
	}
	if len(p.Nodes) != 1 || p.Nodes[0].BMID != 1 {
		t.Fatalf("planned: %+v", p.Nodes)
	}
}

func TestPlanFlavorUpdate(t *testing.T) {
	nova := []novabm.NovaFlavor{
		{FlavorID: "bm.small", Name: "baremetal.small", VCPUs: 16, MemoryMB: 1024, RootGB: 10,
			ExtraSpecs: map[string]string{novabm.SpecDeployKernel: "old-k", novabm.SpecDeployRamdisk: "old-r", "cpu_arch": "x86_64"}},
		{FlavorID: "m1.tiny", Name: "m1.tiny", VCPUs: 1, MemoryMB: 512, ExtraSpecs: map[string]string{}},
		{FlavorID: "bm.gone", Name: "gone", Deleted: true, ExtraSpecs: map[string]string{novabm.SpecDeployKernel: "old-k"}},
	}
	o := novabm.FlavorOptions{DeployKernel: "k", DeployRamdisk: "r", All: true, Import: nova}
	ch, err := novabm.PlanFlavorUpdate(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || ch[0].Create == nil || ch[0].ID != "bm.small" || ch[0].Set[novabm.SpecDeployKernel] != "k" ||
		ch[0].Set["resources:CUSTOM_BAREMETAL"] != "1" || ch[0].Set["resources:DISK_GB"] != "0" || ch[0].Set["cpu_arch"] != "x86_64" {
		t.Fatalf("changes: %+v", ch)
	}
	// Once applied, the same update changes nothing.
	specs := map[string]string{}
	for k, v := range ch[0].Set {
		specs[k] = v
	}
	cur := []wire.Flavor{{ID: "bm.small", Name: "baremetal.small", ExtraSpecs: specs}, {ID: "vm", Name: "vm", ExtraSpecs: map[string]string{}}}
	ch, err = novabm.PlanFlavorUpdate(cur, o)
	if err != nil || len(ch) != 1 || len(ch[0].Set) != 0 || ch[0].Create != nil {
		t.Fatalf("second update: %+v, %v", ch, err)
	}
	if _, err := novabm.PlanFlavorUpdate(cur, novabm.FlavorOptions{DeployKernel: "k", DeployRamdisk: "r", Flavors: []string{"nope"}}); err == nil {
		t.Fatal("an unknown --flavor was accepted")
	}
}
