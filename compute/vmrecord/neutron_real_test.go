package vmrecord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit/realneutron"
)

// realNeutron returns the env of the real Neutron (testkit/realneutron:
// without NEUTRON_ENV the test skips loudly, or fails in CI) and corral's
// client of that Neutron.
func realNeutron(t *testing.T) (map[string]string, *neutron.Client) {
	t.Helper()
	env := realneutron.Load(t, "the Neutron ports of VMs").All()
	nc, err := neutron.New(neutron.Options{AuthType: neutron.AuthPassword, AuthURL: env["OS_AUTH_URL"],
		Username: env["CORRAL_SERVICE_USERNAME"], Password: env["CORRAL_SERVICE_PASSWORD"], ProjectName: env["SERVICE_PROJECT"],
		RegionName: env["NEUTRON_REGION"], ValidInterfaces: "public"})
	if err != nil {
		t.Fatal(err)
	}
	return env, nc
}

// Against the real Neutron: a VM's port on the shared provider network
// has vnic type normal, the hypervisor host as binding:host_id, corral's
// mark, and an address of the network; the delete deletes it.
func TestRealNeutronVMPorts(t *testing.T) {
	env, nc := realNeutron(t)
	ctx := context.Background()
	c, _ := vmWorld(t, nc)
	id := uuid.NewString()
	t.Cleanup(func() {
		if ps, err := nc.Ports(context.Background(), neutron.PortFilter{DeviceID: id}); err == nil {
			for _, p := range ps {
				_ = nc.DeletePort(context.Background(), p.ID)
			}
		}
	})
	provNet := env["NEUTRON_PROVIDER_NETWORK_ID"]
	c.Must(t, &fsm.CreateServer{ID: id, Name: "vm-real", FlavorID: "f1", ImageRef: "img", Host: "hv1", Networks: []fsm.Network{{UUID: provNet}}})
	c.WaitStatus(t, id, fsm.StatusActive, 2*time.Minute)
	ps, err := nc.Ports(ctx, neutron.PortFilter{DeviceID: id})
	if err != nil || len(ps) != 1 {
		t.Fatalf("ports of the VM %+v, %v; want one", ps, err)
	}
	p := ps[0]
	if p.VNICType != neutron.VNICNormal || p.HostID != "hv1" || p.Description != neutron.CreatedByCorral || p.NetworkID != provNet || len(p.FixedIPs) != 1 {
		t.Errorf("the VM's port %+v: want vnic normal, host hv1, corral's, one address on %s", p, provNet)
	}
	if rec := c.Store().ServerNet(id); len(rec.Ports) != 1 || rec.Ports[0].NetworkName != env["NEUTRON_PROVIDER_NETWORK"] {
		t.Errorf("recorded %+v", rec.Ports)
	}
	c.Must(t, &fsm.DeleteServer{ID: id})
	c.WaitStatus(t, id, fsm.StatusDeleted, 2*time.Minute)
	if _, err := nc.Port(ctx, p.ID); !errors.Is(err, neutron.ErrNotFound) {
		t.Errorf("the VM's port after the delete: %v, want gone", err)
	}
}
