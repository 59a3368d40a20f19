package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// The security groups of a server's ports: a boot's resolved groups kept
// in its port record, a port recorded with its groups (bounded), a change
// requested on a server with ports (task and action, no instance action:
// Nova records none), refused as it must be and then changing nothing,
// finished by the owner at its epoch with the groups each port has now,
// or with Nova's code and fault; a snapshot carries all of it.
func TestSecurityGroupActions(t *testing.T) {
	a, s := activeServer(t)
	a.withFeatures()
	web := SecurityGroupRef{ID: "sg-web", Name: "web"}
	def := SecurityGroupRef{ID: "sg-default", Name: "default"}
	many := make([]SecurityGroupRef, MaxSecurityGroups+1)
	for i := range many {
		many[i] = SecurityGroupRef{ID: fmt.Sprintf("sg-%d", i)}
	}
	before := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p1", NetworkID: "n", SecurityGroups: many, GroupsKnown: true}}, ErrInvalid},
		{&RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p1", NetworkID: "n", SecurityGroups: []SecurityGroupRef{web, web}, GroupsKnown: true}}, ErrInvalid},
		{&RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p1", NetworkID: "n", SecurityGroups: []SecurityGroupRef{{Name: "x"}}, GroupsKnown: true}}, ErrInvalid},
		{&RecordServerPort{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p1", NetworkID: "n", SecurityGroups: []SecurityGroupRef{web}}}, ErrInvalid},
		// No port yet: Nova's "could not be found as device id on any ports".
		{&RequestSecurityGroupAction{ID: s.ID, Kind: ActionAddSecurityGroup, Group: web}, ErrNotFound},
		{&CreateServer{ID: sid(5), Name: "x", FlavorID: "bm", ImageRef: "img", Host: "h2", SecurityGroups: many}, ErrInvalid},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.c.Type(), tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a refused command changed the state")
	}

	a.ok(&RecordServerPort{Meta: at(3), ID: s.ID, Host: s.Host, Epoch: s.Epoch,
		Port: ServerPort{ID: "p1", NetworkID: "net-a", SecurityGroups: []SecurityGroupRef{def}, GroupsKnown: true}})
	a.ok(&RecordServerPort{Meta: at(3), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Port: ServerPort{ID: "p2", NetworkID: "net-b"}})
	if p, _ := a.s.ServerNet(s.ID).Port("p1"); !p.GroupsKnown || !reflect.DeepEqual(p.SecurityGroups, []SecurityGroupRef{def}) {
		t.Fatalf("recorded port %+v", p)
	}
	history := actionNames(a.s.InstanceActions(s.ID))
	before = a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RequestSecurityGroupAction{ID: s.ID, Kind: "explode", Group: web}, ErrInvalid},
		{&RequestSecurityGroupAction{ID: s.ID, Kind: ActionAddSecurityGroup}, ErrInvalid},
		{&RequestSecurityGroupAction{ID: sid(9), Kind: ActionAddSecurityGroup, Group: web}, ErrNotFound},
		{&RequestServerAction{ID: s.ID, Kind: ActionAddSecurityGroup}, ErrInvalid}, // only through its own command
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup}, ErrConflict},
		{&SetPortIntent{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepSecurityGroups}, ErrInvalid}, // names its port
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.c.Type(), tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a refused security group command changed the state")
	}

	req := &RequestSecurityGroupAction{Meta: at(4), ID: s.ID, Kind: ActionAddSecurityGroup, Group: web}
	req.RequestID = "req-sg-1"
	a.ok(req)
	got, _ := a.s.Server(s.ID)
	if got.TaskState != TaskUpdatingSecurityGroups || got.Action == nil || got.Action.Kind != ActionAddSecurityGroup || got.Status != StatusActive {
		t.Fatalf("after the request: %+v", got)
	}
	want := &SecurityGroupRequest{Kind: ActionAddSecurityGroup, Group: web, RequestID: "req-sg-1", RequestedAt: t0.Add(4e9)}
	if r := a.s.ServerNet(s.ID).SecurityGroup; !reflect.DeepEqual(r, want) {
		t.Fatalf("request %+v, want %+v", r, want)
	}
	a.ok(&SetPortIntent{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Step: PortStepSecurityGroups, PortID: "p1"})
	busy := a.s.Digest()
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&RequestSecurityGroupAction{ID: s.ID, Kind: ActionRemoveSecurityGroup, Group: web}, ErrConflict}, // a task in progress
		{&RequestServerAction{ID: s.ID, Kind: ActionReboot}, ErrConflict},
		{&FinishServerAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup}, ErrConflict},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch + 1, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9)}, ErrFenced},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(3e9)}, ErrConflict},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRemoveSecurityGroup, RequestedAt: t0.Add(4e9)}, ErrConflict},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9),
			Ports: []PortSecurityGroups{{PortID: "p9"}}}, ErrInvalid},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9),
			Ports: []PortSecurityGroups{{PortID: "p1"}, {PortID: "p1"}}}, ErrInvalid},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9),
			Ports: []PortSecurityGroups{{PortID: "p1", Groups: many}}}, ErrInvalid},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9), Fault: "no code"}, ErrInvalid},
		{&FinishSecurityGroupAction{ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9), Code: 200, Fault: "ok?"}, ErrInvalid},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.c.Type(), tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != busy {
		t.Fatal("a refused security group command changed the state")
	}
	r := New()
	if err := r.Restore(snapshotReader(t, a.s)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !bytes.Equal(snapshotBytes(t, r), snapshotBytes(t, a.s)) {
		t.Fatal("the restored request differs")
	}

	a.ok(&FinishSecurityGroupAction{Meta: at(5), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionAddSecurityGroup, RequestedAt: t0.Add(4e9),
		Ports: []PortSecurityGroups{{PortID: "p1", Groups: []SecurityGroupRef{def, web}}, {PortID: "p2", Groups: []SecurityGroupRef{web}}}})
	if got, _ := a.s.Server(s.ID); got.TaskState != "" || got.Action != nil || got.Status != StatusActive {
		t.Fatalf("after the add: %+v", got)
	}
	n := a.s.ServerNet(s.ID)
	if r := n.SecurityGroup; r == nil || !r.Done || r.Fault != "" || r.Code != 0 {
		t.Fatalf("outcome %+v", r)
	}
	if p, _ := n.Port("p2"); !p.GroupsKnown || !reflect.DeepEqual(p.SecurityGroups, []SecurityGroupRef{web}) {
		t.Fatalf("port p2 after the add: %+v", p)
	}

	a.ok(&RequestSecurityGroupAction{Meta: at(6), ID: s.ID, Kind: ActionRemoveSecurityGroup, Group: SecurityGroupRef{ID: "sg-x", Name: "x"}})
	a.ok(&FinishSecurityGroupAction{Meta: at(7), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRemoveSecurityGroup, RequestedAt: t0.Add(6e9),
		Code: 404, Fault: "Security group x not associated with the instance " + s.ID})
	if r := a.s.ServerNet(s.ID).SecurityGroup; r == nil || !r.Done || r.Code != 404 {
		t.Fatalf("failed outcome %+v", r)
	}
	if got, _ := a.s.Server(s.ID); got.TaskState != "" || got.Status != StatusActive || got.Fault != nil {
		t.Fatalf("after the failed remove: %+v", got)
	}
	if got := actionNames(a.s.InstanceActions(s.ID)); got != history {
		t.Fatalf("history %s, want %s: Nova records no instance action of security groups", got, history)
	}

	// A boot's groups, kept in its port record.
	b := bareMetalFixture(t)
	b.ok(&CreateServer{Meta: at(2), ID: sid(2), Name: "y", FlavorID: "bm", ImageRef: "img", Host: "h2", Claim: goldClaim(3),
		SecurityGroups: []SecurityGroupRef{web}})
	if got := b.s.ServerNet(sid(2)).Requested; !reflect.DeepEqual(got, []SecurityGroupRef{web}) {
		t.Fatalf("requested groups %+v", got)
	}
}
