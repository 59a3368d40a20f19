package driver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/testkit"
	"github.com/corral-dev/corral/testkit/realneutron"
)

// securityGroupDone commits a security group request (the API's part) and
// waits until the owner finished it.
func (w *world) securityGroupDone(cmd *fsm.RequestSecurityGroupAction) fsm.SecurityGroupRequest {
	w.t.Helper()
	cmd.RequestID = "req-" + uuid.NewString()
	if err := w.propose(cmd); err != nil {
		w.t.Fatal(err)
	}
	var r fsm.SecurityGroupRequest
	testkit.Eventually(w.t, 2*time.Minute, func() error {
		got := w.leader().Node.Store().ServerNet(cmd.ID).SecurityGroup
		if got == nil || got.RequestID != cmd.RequestID || !got.Done {
			return fmt.Errorf("the %s is not done: %+v", cmd.Kind, got)
		}
		r = *got
		return nil
	})
	return r
}

// Against the real Neutron (Ironic simulated): a boot of alice's in a
// group she made gets its port in that group, recorded by name; adding
// her default group and removing hers change the port in Neutron and the
// record; removing it again is Nova's 404, and changes nothing.
func TestRealNeutronSecurityGroups(t *testing.T) {
	env := realneutron.Load(t, "the Ironic driver's security groups")
	w, nc := realWorld(t, env, 1, nil)
	ctx := context.Background()
	provNet := env.Provider().NetworkID
	aliceS := env.Login(t, realneutron.Alice)
	asc, alice := aliceS.Network, aliceS.ProjectID
	name := "corral-" + uuid.NewString()[:8]
	web, err := groups.Create(ctx, asc, groups.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("alice making a security group: %v", err)
	}
	// Cleanups run last in, first out: the group goes after the ports.
	t.Cleanup(func() { _ = groups.Delete(context.Background(), asc, web.ID).ExtractErr() })
	def, err := nc.SecurityGroups(ctx, neutron.SecurityGroupFilter{ProjectID: alice, Name: "default"})
	if err != nil || len(def) != 1 {
		t.Fatalf("alice's default group: %+v, %v", def, err)
	}
	id := uuid.NewString()
	cleanupPortsOf(t, nc, "", id)
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "sg", FlavorID: "gold", ImageRef: "img", ProjectID: alice,
		Networks: []fsm.Network{{UUID: provNet}}, SecurityGroups: []fsm.SecurityGroupRef{{ID: web.ID, Name: web.Name}}}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(id, fsm.StatusActive, 2*time.Minute)
	portGroups := func() ([]string, []fsm.SecurityGroupRef) {
		t.Helper()
		rec := w.leader().Node.Store().ServerNet(id)
		if len(rec.Ports) != 1 {
			t.Fatalf("recorded ports %+v", rec.Ports)
		}
		p, err := nc.Port(ctx, rec.Ports[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(slices.Values(p.SecurityGroups)), rec.Ports[0].SecurityGroups
	}
	if inNeutron, rec := portGroups(); !slices.Equal(inNeutron, []string{web.ID}) || len(rec) != 1 || rec[0] != (fsm.SecurityGroupRef{ID: web.ID, Name: name}) {
		t.Fatalf("the boot's port: groups %v in Neutron, %+v recorded; want %s (%s)", inNeutron, rec, web.ID, name)
	}
	if r := w.securityGroupDone(&fsm.RequestSecurityGroupAction{ID: id, Kind: fsm.ActionAddSecurityGroup,
		Group: fsm.SecurityGroupRef{ID: def[0].ID, Name: "default"}}); r.Code != 0 {
		t.Fatalf("add default: %+v", r)
	}
	if inNeutron, rec := portGroups(); !slices.Equal(inNeutron, slices.Sorted(slices.Values([]string{web.ID, def[0].ID}))) || len(rec) != 2 {
		t.Fatalf("after the add: groups %v in Neutron, %+v recorded", inNeutron, rec)
	}
	if r := w.securityGroupDone(&fsm.RequestSecurityGroupAction{ID: id, Kind: fsm.ActionRemoveSecurityGroup,
		Group: fsm.SecurityGroupRef{ID: web.ID, Name: name}}); r.Code != 0 {
		t.Fatalf("remove %s: %+v", name, r)
	}
	if inNeutron, rec := portGroups(); !slices.Equal(inNeutron, []string{def[0].ID}) || len(rec) != 1 || rec[0].Name != "default" {
		t.Fatalf("after the remove: groups %v in Neutron, %+v recorded", inNeutron, rec)
	}
	r := w.securityGroupDone(&fsm.RequestSecurityGroupAction{ID: id, Kind: fsm.ActionRemoveSecurityGroup,
		Group: fsm.SecurityGroupRef{ID: web.ID, Name: name}})
	if want := "Security group " + name + " not associated with the instance " + id; r.Code != 404 || r.Fault != want {
		t.Fatalf("a second remove: %+v, want 404 %q", r, want)
	}
	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatusWithin(id, fsm.StatusDeleted, 2*time.Minute)
}
