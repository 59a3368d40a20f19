package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/computetest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
)

// TestHypervisorDriverWithNeutron: with [neutron], a hypervisor host's
// driver gives its VMs Neutron ports of vnic type normal bound to the
// host; without, none.
func TestHypervisorDriverWithNeutron(t *testing.T) {
	const netA = "0a000000-0000-4000-8000-00000000000a"
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	for _, tc := range []struct {
		name  string
		ports int
	}{{"with [neutron]", 1}, {"without", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var d compute.Virt
			var err error
			if tc.ports > 0 {
				d, err = hypervisorDriver(nt, slog.New(slog.DiscardHandler))
			} else {
				d, err = hypervisorDriver(nil, slog.New(slog.DiscardHandler))
			}
			if err != nil {
				t.Fatal(err)
			}
			c := computetest.New(t, fsm.KindHypervisor, "hv1")
			c.Run(t, compute.Config{}, d)
			id := "10000000-0000-4000-9000-00000000000" + map[int]string{0: "0", 1: "1"}[tc.ports]
			c.Must(t, &fsm.CreateServer{ID: id, Name: "vm", FlavorID: "f1", ImageRef: "img", Host: "hv1", Networks: []fsm.Network{{UUID: netA}}})
			c.WaitStatus(t, id, fsm.StatusActive, 10*time.Second)
			ps := nt.OfDevice(id)
			if len(ps) != tc.ports {
				t.Fatalf("ports of the VM %+v, want %d", ps, tc.ports)
			}
			if tc.ports > 0 && (ps[0].VNICType != neutron.VNICNormal || ps[0].HostID != "hv1") {
				t.Errorf("the VM's port %+v: want vnic normal on hv1", ps[0])
			}
		})
	}
}
