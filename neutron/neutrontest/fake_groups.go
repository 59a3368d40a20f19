package neutrontest

import (
	"context"
	"slices"
	"strings"

	"github.com/corral-dev/corral/neutron"
)

// The fake's security groups.

// AddSecurityGroup adds a security group (its id given) and returns it.
func (f *Neutron) AddSecurityGroup(g neutron.SecurityGroup) neutron.SecurityGroup {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[g.ID] = g
	return g
}

// defaultGroup is the id of project's default group, made when first
// needed, as Neutron makes it.
func (f *Neutron) defaultGroup(project string) string {
	id := "sg-default-" + project
	if _, ok := f.groups[id]; !ok {
		f.groups[id] = neutron.SecurityGroup{ID: id, Name: "default", ProjectID: project, Description: "Default security group"}
	}
	return id
}

func groupNotFound(id string) error {
	return answer(&neutron.APIError{Method: "GET", URL: "/v2.0/security-groups/" + id, Status: 404, Type: "SecurityGroupNotFound",
		Message: "Security group " + id + " does not exist"})
}

// SecurityGroups lists the groups fl selects, by id.
func (f *Neutron) SecurityGroups(_ context.Context, fl neutron.SecurityGroupFilter) ([]neutron.SecurityGroup, error) {
	f.call("list-groups")
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl.ProjectID != "" {
		f.defaultGroup(fl.ProjectID)
	}
	var out []neutron.SecurityGroup
	for _, g := range f.groups {
		if fl.ProjectID != "" && g.ProjectID != fl.ProjectID || fl.Name != "" && g.Name != fl.Name ||
			len(fl.IDs) > 0 && !slices.Contains(fl.IDs, g.ID) {
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b neutron.SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
