package neutron

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"

	"github.com/corral-dev/corral/testkit/realneutron"
)

// Security groups against the real Neutron, as corral's service user
// reads and applies them for a user's servers: a group alice made in her
// project found by project and name, by ids and by id, with its rules;
// her project's default group; a port created in one group, its groups
// replaced, emptied, and a port without groups given the default.
func TestRealNeutronSecurityGroups(t *testing.T) {
	env := realneutron.Load(t, "the Neutron client's security groups")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sv := env.User(realneutron.Service)
	c := mustNew(t, Options{AuthType: AuthPassword, AuthURL: env.AuthURL(), Username: sv.Username,
		Password: sv.Password, ProjectName: sv.Project, RegionName: env.Region(), ValidInterfaces: "public"})
	aliceS := env.Login(t, realneutron.Alice)
	alice := aliceS.ProjectID
	name := "corral-test-" + randomMAC(t)[9:]
	mine, err := groups.Create(ctx, aliceS.Network, groups.CreateOpts{Name: name, Description: "web"}).Extract()
	if err != nil {
		t.Fatalf("alice creating a security group: %v", err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), aliceS.Network, mine.ID).ExtractErr() })

	byName, err := c.SecurityGroups(ctx, SecurityGroupFilter{ProjectID: alice, Name: name})
	if err != nil || len(byName) != 1 || byName[0].ID != mine.ID || byName[0].ProjectID != alice || byName[0].Description != "web" {
		t.Fatalf("by project and name: %+v, %v", byName, err)
	}
	if len(byName[0].Rules) == 0 || byName[0].Rules[0].SecurityGroupID != mine.ID || byName[0].Rules[0].Direction == "" {
		t.Errorf("rules of a new group (Neutron adds egress rules): %+v", byName[0].Rules)
	}
	def, err := c.SecurityGroups(ctx, SecurityGroupFilter{ProjectID: alice, Name: "default"})
	if err != nil || len(def) != 1 {
		t.Fatalf("alice's default group: %+v, %v", def, err)
	}
	both, err := c.SecurityGroups(ctx, SecurityGroupFilter{IDs: []string{mine.ID, def[0].ID, mine.ID}})
	if err != nil || len(both) != 2 {
		t.Fatalf("by ids: %+v, %v", both, err)
	}
	if g, err := c.SecurityGroup(ctx, mine.ID); err != nil || g.Name != name || g.ProjectID != alice {
		t.Errorf("by id: %+v, %v", g, err)
	}
	if _, err := c.SecurityGroup(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown group = %v, want ErrNotFound", err)
	}
	if _, err := c.SecurityGroups(ctx, SecurityGroupFilter{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unfiltered listing = %v, want ErrInvalid", err)
	}

	provNet := env.Provider().NetworkID
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: alice, Description: CreatedByCorral, SecurityGroups: []string{mine.ID}})
	if err != nil {
		t.Fatalf("create port in a group: %v", err)
	}
	t.Cleanup(func() { _ = c.DeletePort(context.Background(), p.ID) })
	if !slices.Equal(p.SecurityGroups, []string{mine.ID}) || !p.SecurityGroupsApply() {
		t.Errorf("port created in %s: groups %v, port security %v, addresses %v", mine.ID, p.SecurityGroups, p.PortSecurityEnabled, p.FixedIPs)
	}
	two := []string{def[0].ID, mine.ID}
	u, err := c.UpdatePort(ctx, p.ID, PortUpdate{SecurityGroups: &two})
	if err != nil || !sameSet(u.SecurityGroups, two) {
		t.Errorf("groups replaced by %v: %v, %v", two, u.SecurityGroups, err)
	}
	none := []string{}
	if u, err = c.UpdatePort(ctx, p.ID, PortUpdate{SecurityGroups: &none}); err != nil || len(u.SecurityGroups) != 0 {
		t.Errorf("groups emptied: %v, %v", u.SecurityGroups, err)
	}
	q, err := c.CreatePort(ctx, PortCreate{NetworkID: provNet, ProjectID: alice, Description: CreatedByCorral})
	if err != nil {
		t.Fatalf("create port: %v", err)
	}
	t.Cleanup(func() { _ = c.DeletePort(context.Background(), q.ID) })
	if !slices.Equal(q.SecurityGroups, []string{def[0].ID}) {
		t.Errorf("a port created without groups has %v, want the project's default %s", q.SecurityGroups, def[0].ID)
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
