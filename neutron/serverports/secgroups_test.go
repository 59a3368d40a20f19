package serverports_test

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
	"github.com/corral-dev/corral/neutron/neutrontest"
	"github.com/corral-dev/corral/testkit"
)

// ChangeSecurityGroups makes the test's VM driver a security group actor.
func (v vm) ChangeSecurityGroups(ctx context.Context, h *compute.Handle, s fsm.Server, req fsm.SecurityGroupRequest) (compute.SecurityGroupOutcome, error) {
	return v.ports.ChangeSecurityGroups(ctx, h, s, req)
}

const netB = "0b000000-0000-4000-8000-00000000000b"

// groupsOf are the recorded groups of each of the server's ports, "id:name"
// joined by commas, in the order recorded.
func groupsOf(c interface{ Store() *fsm.Store }, id string) []string {
	var out []string
	for _, p := range c.Store().ServerNet(id).Ports {
		var g []string
		for _, r := range p.SecurityGroups {
			g = append(g, r.ID+":"+r.Name)
		}
		out = append(out, fmt.Sprint(p.GroupsKnown, g))
	}
	return out
}

// waitDone waits until the server's security group request is done.
func waitDone(t *testing.T, c interface{ Store() *fsm.Store }, id string) fsm.SecurityGroupRequest {
	t.Helper()
	var r fsm.SecurityGroupRequest
	testkit.Eventually(t, 10*time.Second, func() error {
		got := c.Store().ServerNet(id).SecurityGroup
		if got == nil || !got.Done {
			return fmt.Errorf("security group request %+v not done", got)
		}
		r = *got
		return nil
	})
	return r
}

// A boot's ports are created in the groups it asked for (none asked:
// Neutron's default of the project), each port recorded with its groups
// named; an add gives a group to every port after each port's intent, a
// remove takes it off; removing a group no port has is Nova's 404, adding
// one to a port without port security Nova's 400, and neither changes a
// port.
func TestSecurityGroupsOfPorts(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	off := false
	nt.AddNetwork(neutron.Network{ID: netB, Name: "open", Shared: true, PortSecurityEnabled: &off}, netipPrefix("198.51.100.0/24"))
	web := nt.AddSecurityGroup(neutron.SecurityGroup{ID: "sg-web", Name: "web", ProjectID: "p1"})
	db := nt.AddSecurityGroup(neutron.SecurityGroup{ID: "sg-db", Name: "db", ProjectID: "p1"})
	c := newLocal(t)
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {UUID: netA}}, SecurityGroups: []fsm.SecurityGroupRef{{ID: web.ID, Name: web.Name}}})
	other := "10000000-0000-4000-9000-000000000002"
	c.Must(t, &fsm.CreateServer{ID: other, Name: "vm-2", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {UUID: netB}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	waitStatus(t, c, other, fsm.StatusActive)
	for _, p := range nt.OfDevice(serverID) {
		if !slices.Equal(p.SecurityGroups, []string{web.ID}) {
			t.Errorf("port %s of the boot in web: groups %v", p.ID, p.SecurityGroups)
		}
	}
	if got, want := groupsOf(c, serverID), []string{"true [sg-web:web]", "true [sg-web:web]"}; !slices.Equal(got, want) {
		t.Fatalf("recorded groups %q, want %q", got, want)
	}
	if got, want := groupsOf(c, other), []string{"true [sg-default-p1:default]", "true []"}; !slices.Equal(got, want) {
		t.Fatalf("recorded groups of a boot without groups %q, want %q (the default, and none without port security)", got, want)
	}

	ports := c.Store().ServerNet(serverID).Ports
	intents := len(c.PortIntents())
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionAddSecurityGroup, Group: fsm.SecurityGroupRef{ID: db.ID, Name: db.Name}})
	if r := waitDone(t, c, serverID); r.Code != 0 {
		t.Fatalf("add: %+v", r)
	}
	waitStatus(t, c, serverID, fsm.StatusActive)
	for _, p := range ports {
		if q, _ := nt.Get(p.ID); !slices.Equal(q.SecurityGroups, []string{web.ID, db.ID}) {
			t.Errorf("port %s after the add: %v", p.ID, q.SecurityGroups)
		}
	}
	if got, want := groupsOf(c, serverID), []string{"true [sg-web:web sg-db:db]", "true [sg-web:web sg-db:db]"}; !slices.Equal(got, want) {
		t.Fatalf("recorded groups %q, want %q", got, want)
	}
	if got, want := c.PortIntents()[intents:], []string{"security_groups " + ports[0].ID, "security_groups " + ports[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("intents %q, want %q", got, want)
	}

	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionRemoveSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	if r := waitDone(t, c, serverID); r.Code != 0 {
		t.Fatalf("remove: %+v", r)
	}
	if got, want := groupsOf(c, serverID), []string{"true [sg-db:db]", "true [sg-db:db]"}; !slices.Equal(got, want) {
		t.Fatalf("recorded groups after the remove %q, want %q", got, want)
	}

	before := c.Store().ServerNet(serverID).Ports
	intents = len(c.PortIntents())
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionRemoveSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	r := waitDone(t, c, serverID)
	if want := "Security group web not associated with the instance " + serverID; r.Code != 404 || r.Fault != want {
		t.Fatalf("a second remove: %+v, want 404 %q", r, want)
	}
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: other, Kind: fsm.ActionAddSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	r = waitDone(t, c, other)
	if r.Code != 400 || r.Fault != "Network requires port_security_enabled and subnet associated in order to apply security groups." {
		t.Fatalf("an add to a server with a port without port security: %+v, want Nova's 400", r)
	}
	for _, p := range nt.OfDevice(other) {
		if slices.Contains(p.SecurityGroups, web.ID) {
			t.Errorf("port %s got the group of a refused add", p.ID)
		}
	}
	if got := c.PortIntents()[intents:]; len(got) != 0 {
		t.Fatalf("intents of refused changes: %q", got)
	}
	if got := c.Store().ServerNet(serverID).Ports; !reflect.DeepEqual(got, before) {
		t.Fatalf("a refused remove changed the record:\n%+v\n%+v", got, before)
	}

	// Neutron's refusal of a change is the request's answer, with
	// Neutron's words.
	nt.SetFailGroups(func(string) error {
		return fmt.Errorf("%w: %w", neutron.ErrConflict, &neutron.APIError{Method: "PUT", Status: 409, Type: "Conflict", Message: "busy"})
	})
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionAddSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	if r := waitDone(t, c, serverID); r.Code != 409 || r.Fault != "busy" {
		t.Fatalf("an add Neutron refuses: %+v, want 409 with Neutron's message", r)
	}
}

// A change the owner did not live to finish (Neutron changed the first
// port, its answer lost) is carried out again without changing a port
// twice: the second attempt finds the first port done and changes only
// the other; a remove that finds the group already gone from every port
// it had been recorded on is done, not Nova's 404.
func TestSecurityGroupChangeResumed(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	web := nt.AddSecurityGroup(neutron.SecurityGroup{ID: "sg-web", Name: "web", ProjectID: "p1"})
	failed := 0 // the fake's lock is held where it is read and written
	failFirst := func(string) error {
		if failed++; failed == 1 {
			return fmt.Errorf("%w: no answer", neutron.ErrUnavailable)
		}
		return nil
	}
	nt.SetFailGroups(failFirst)
	c := newLocal(t)
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}, {UUID: netA}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	ports := c.Store().ServerNet(serverID).Ports
	intents := len(c.PortIntents())
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionAddSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	if r := waitDone(t, c, serverID); r.Code != 0 {
		t.Fatalf("add: %+v", r)
	}
	if got, want := c.PortIntents()[intents:], []string{"security_groups " + ports[0].ID, "security_groups " + ports[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("intents %q, want one per port (the first port not changed again)", got)
	}
	if got, want := groupsOf(c, serverID), []string{"true [sg-default-p1:default sg-web:web]", "true [sg-default-p1:default sg-web:web]"}; !slices.Equal(got, want) {
		t.Fatalf("recorded groups %q, want %q", got, want)
	}

	nt.SetFailGroups(nil)
	failed = 0
	nt.SetFailGroups(failFirst)
	intents = len(c.PortIntents())
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionRemoveSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	if r := waitDone(t, c, serverID); r.Code != 0 {
		t.Fatalf("a remove resumed: %+v, want done", r)
	}
	if got := len(c.PortIntents()) - intents; got != 2 {
		t.Fatalf("%d intents for a remove from two ports", got)
	}
	for _, p := range ports {
		if q, _ := nt.Get(p.ID); slices.Contains(q.SecurityGroups, web.ID) {
			t.Errorf("port %s keeps web", p.ID)
		}
	}
}

// A change whose intent is refused (the host lost the server) changes no
// port.
func TestSecurityGroupChangeRefusedIntent(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	web := nt.AddSecurityGroup(neutron.SecurityGroup{ID: "sg-web", Name: "web", ProjectID: "p1"})
	c := newLocal(t)
	c.Refuse = func(cmd fsm.Command) error {
		if in, ok := cmd.(*fsm.SetPortIntent); ok && in.Step == fsm.PortStepSecurityGroups {
			return fmt.Errorf("%w: server moved", fsm.ErrFenced)
		}
		return nil
	}
	run(t, c, nt)
	c.Must(t, &fsm.CreateServer{ID: serverID, Name: "vm-1", FlavorID: "f1", ImageRef: "img", Host: "h1", ProjectID: "p1",
		Networks: []fsm.Network{{UUID: netA}}})
	waitStatus(t, c, serverID, fsm.StatusActive)
	c.Must(t, &fsm.RequestSecurityGroupAction{ID: serverID, Kind: fsm.ActionAddSecurityGroup, Group: fsm.SecurityGroupRef{ID: web.ID, Name: web.Name}})
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := c.Refused(); n < 2 {
			return fmt.Errorf("%d intents refused, want 2 attempts", n)
		}
		return nil
	})
	for _, p := range nt.OfDevice(serverID) {
		if slices.Contains(p.SecurityGroups, web.ID) {
			t.Fatalf("port %s changed under a refused intent", p.ID)
		}
	}
	if s, _ := c.Store().Server(serverID); s.TaskState != fsm.TaskUpdatingSecurityGroups {
		t.Fatalf("task %q, want the change still pending", s.TaskState)
	}
}

func netipPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// The network's name a port is recorded with is read from Neutron once
// for a while, not at every boot: a second server on the same network
// soon after reads none.
func TestNetworkNameRememberedForAWhile(t *testing.T) {
	nt := neutrontest.New(neutron.Network{ID: netA, Name: "tenant", Shared: true})
	nt.NetworkCalls = make(chan struct{}, 16)
	c := newLocal(t)
	run(t, c, nt)
	for i, id := range []string{serverID, "10000000-0000-4000-9000-000000000002"} {
		c.Must(t, &fsm.CreateServer{ID: id, Name: fmt.Sprint("vm-", i), FlavorID: "f1", ImageRef: "img", Host: "h1",
			Networks: []fsm.Network{{UUID: netA}}})
		waitStatus(t, c, id, fsm.StatusActive)
		if p := c.Store().ServerNet(id).Ports; len(p) != 1 || p[0].NetworkName != "tenant" {
			t.Fatalf("recorded %+v", p)
		}
	}
	if n := len(nt.NetworkCalls); n != 1 {
		t.Fatalf("%d reads of the network for two boots, want 1", n)
	}
}
