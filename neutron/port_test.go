package neutron

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPortLifecycle(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	c := mustNew(t, f.opts())
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: "net-1", ProjectID: "proj-a", DeviceID: "srv-1",
		DeviceOwner: "compute:nova", VNICType: VNICBaremetal, HostID: "node-1", MACAddress: "52:54:00:aa:00:01",
		FixedIPs: []FixedIP{{SubnetID: "sub-1", IPAddress: "192.0.2.10"}}})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.bodies[0]["port"].(map[string]any)
	for k, v := range map[string]any{"network_id": "net-1", "project_id": "proj-a", "device_id": "srv-1",
		"device_owner": "compute:nova", "binding:vnic_type": "baremetal", "binding:host_id": "node-1",
		"mac_address": "52:54:00:aa:00:01"} {
		if sent[k] != v {
			t.Errorf("create sent %s = %v, want %v", k, sent[k], v)
		}
	}
	if ips := sent["fixed_ips"].([]any); len(ips) != 1 || !reflect.DeepEqual(ips[0], map[string]any{"subnet_id": "sub-1", "ip_address": "192.0.2.10"}) {
		t.Errorf("fixed_ips sent %v", sent["fixed_ips"])
	}
	if p.HostID != "node-1" || p.VNICType != VNICBaremetal || p.VIFType != "unbound" || len(p.FixedIPs) != 1 ||
		p.FixedIPs[0].IPAddress != "192.0.2.10" {
		t.Errorf("created port %+v", p)
	}
	// Same MAC on the same network: Neutron's 409, as ErrConflict with its type.
	_, err = c.CreatePort(ctx, PortCreate{NetworkID: "net-1", MACAddress: "52:54:00:aa:00:01"})
	if !errors.Is(err, ErrConflict) || ErrorType(err) != "MacAddressInUse" || !strings.Contains(err.Error(), "is in use") {
		t.Fatalf("MAC clash = %v (type %q)", err, ErrorType(err))
	}
	if _, err := c.CreatePort(ctx, PortCreate{NetworkID: "net-1", DeviceID: "srv-2"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.Ports(ctx, PortFilter{DeviceID: "srv-1"})
	if err != nil || len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("ports of srv-1 = %+v, %v", list, err)
	}
	if _, err := c.Ports(ctx, PortFilter{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unfiltered listing = %v, want ErrInvalid", err)
	}
	u, err := c.UnbindPort(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	sent = f.bodies[len(f.bodies)-1]["port"].(map[string]any)
	want := map[string]any{"device_id": "", "device_owner": "", "binding:host_id": "", "binding:profile": nil} // null clears it
	if !reflect.DeepEqual(sent, want) {
		t.Errorf("unbind sent %v, want %v", sent, want)
	}
	if u.DeviceID != "" || u.HostID != "" {
		t.Errorf("unbound port %+v", u)
	}
	if err := c.DeletePort(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePort(ctx, p.ID); err != nil {
		t.Errorf("deleting a port already gone = %v, want nil", err)
	}
	_, err = c.Port(ctx, p.ID)
	if !errors.Is(err, ErrNotFound) || ErrorType(err) != "PortNotFound" {
		t.Errorf("show of a deleted port = %v", err)
	}
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	if err := c.DeletePort(ctx, p.ID); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Errorf("delete while Neutron answers 503 = %v, want ErrUnavailable", err)
	}
}

func TestNetworksForProject(t *testing.T) {
	f := newFake(t)
	f.networks = []map[string]any{
		{"id": "n-own", "name": "own", "project_id": "proj-a", "shared": false},
		{"id": "n-shared", "name": "provider", "project_id": "admin", "shared": true, "provider:network_type": "flat",
			"provider:physical_network": "physnet1"},
		{"id": "n-other", "name": "theirs", "project_id": "proj-b", "shared": false},
		{"id": "n-both", "name": "own-shared", "project_id": "proj-a", "shared": true},
	}
	nets, err := mustNew(t, f.opts()).NetworksFor(context.Background(), "proj-a")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range nets {
		ids = append(ids, n.ID)
		if !n.VisibleTo("proj-a") || n.VisibleTo("proj-b") && !n.Shared {
			t.Errorf("visibility of %+v", n)
		}
	}
	if want := []string{"n-own", "n-both", "n-shared"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("networks of proj-a %v, want %v", ids, want)
	}
	if nets[2].NetworkType != "flat" || nets[2].PhysicalNetwork != "physnet1" {
		t.Errorf("provider attributes %+v", nets[2])
	}
	shared, err := mustNew(t, f.opts()).NetworksFor(context.Background(), "")
	if err != nil || len(shared) != 2 || shared[0].ID != "n-shared" && shared[1].ID != "n-shared" {
		t.Errorf("networks of no project %+v, %v; want the shared ones", shared, err)
	}
	if (Network{ProjectID: "proj-b"}).VisibleTo("proj-a") || (Network{}).VisibleTo("") {
		t.Error("another project's network is visible")
	}
}

// A port corral creates carries its mark in the create itself; a listing
// can select ports by fixed address; a MAC reset sends mac_address null
// (Neutron's port-mac-address-regenerate), which gives the port a new MAC.
func TestPortMarkFixedIPFilterAndMACReset(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	c := mustNew(t, f.opts())
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: "net-1", Description: CreatedByCorral, DeviceID: "srv-1",
		FixedIPs: []FixedIP{{IPAddress: "192.0.2.10"}}})
	if err != nil {
		t.Fatal(err)
	}
	if sent := f.bodies[0]["port"].(map[string]any); sent["description"] != "corral" {
		t.Errorf("create sent description %v, want corral", sent["description"])
	}
	if p.Description != "corral" || CreatedByCorral != "corral" {
		t.Errorf("created port's description %q", p.Description)
	}
	if _, err := c.Ports(ctx, PortFilter{NetworkID: "net-1", FixedIP: "192.0.2.10"}); err != nil {
		t.Fatal(err)
	}
	if _, reqs := f.counts(); !strings.Contains(reqs[len(reqs)-1], "fixed_ips=ip_address%3D192.0.2.10") {
		t.Errorf("listing by fixed address asked %s", reqs[len(reqs)-1])
	}
	if _, err := c.Ports(ctx, PortFilter{FixedIP: "192.0.2.10"}); err != nil {
		t.Errorf("a listing by fixed address alone = %v", err)
	}
	before := p.MACAddress
	r, err := c.ResetMAC(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	sent := f.bodies[len(f.bodies)-1]["port"].(map[string]any)
	if v, ok := sent["mac_address"]; !ok || v != nil || len(sent) != 1 {
		t.Errorf("MAC reset sent %v, want only mac_address null", sent)
	}
	if r.MACAddress == "" || r.MACAddress == before {
		t.Errorf("MAC after the reset %q (before %q)", r.MACAddress, before)
	}
}
