package neutron

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
)

// SecurityGroup is what corral reads of a Neutron security group, with
// its rules.
type SecurityGroup struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	ProjectID   string              `json:"project_id"`
	Rules       []SecurityGroupRule `json:"security_group_rules"`
}

// SecurityGroupRule is one rule of a security group.
type SecurityGroupRule struct {
	ID              string `json:"id"`
	SecurityGroupID string `json:"security_group_id"`
	Direction       string `json:"direction"` // ingress or egress
	EtherType       string `json:"ethertype"`
	Protocol        string `json:"protocol"` // "" for any
	PortRangeMin    *int   `json:"port_range_min"`
	PortRangeMax    *int   `json:"port_range_max"`
	RemoteIPPrefix  string `json:"remote_ip_prefix"`
	RemoteGroupID   string `json:"remote_group_id"`
}

// SecurityGroupFilter narrows a security group listing; zero fields do not
// filter, but a listing must name at least one of them. IDs selects any
// of those groups (one request, Neutron's repeated id filter).
type SecurityGroupFilter struct {
	ProjectID, Name string
	IDs             []string
}

// maxFilterIDs bounds the ids of one listing: their query must fit in a
// URL Neutron takes (Nova splits its own at 150).
const maxFilterIDs = 150

// SecurityGroups lists the security groups f selects (every page), with
// their rules. As corral's service user (an admin) it sees every
// project's: the caller decides what a user may use.
func (c *Client) SecurityGroups(ctx context.Context, f SecurityGroupFilter) ([]SecurityGroup, error) {
	if f.ProjectID == "" && f.Name == "" && len(f.IDs) == 0 {
		return nil, fmt.Errorf("%w: a security group listing needs a project, a name or ids to filter by", ErrInvalid)
	}
	base := url.Values{}
	if f.ProjectID != "" {
		base.Set("project_id", f.ProjectID)
	}
	if f.Name != "" {
		base.Set("name", f.Name)
	}
	chunks := [][]string{nil}
	if len(f.IDs) > 0 {
		chunks = slices.Collect(slices.Chunk(slices.Compact(slices.Sorted(slices.Values(f.IDs))), maxFilterIDs))
	}
	var out []SecurityGroup
	for _, ids := range chunks {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for _, id := range ids {
			q.Add("id", id)
		}
		var doc struct {
			SecurityGroups []SecurityGroup `json:"security_groups"`
		}
		if err := c.getDoc(ctx, "listing security groups", "security-groups?"+q.Encode(), &doc); err != nil {
			return nil, err
		}
		out = append(out, doc.SecurityGroups...)
	}
	return out, nil
}

// SecurityGroup reads one security group.
func (c *Client) SecurityGroup(ctx context.Context, id string) (SecurityGroup, error) {
	var doc struct {
		SecurityGroup SecurityGroup `json:"security_group"`
	}
	err := c.getDoc(ctx, "security group "+id, "security-groups/"+url.PathEscape(id), &doc)
	return doc.SecurityGroup, err
}

// getDoc reads path (under /v2.0/) into doc, as one call.
func (c *Client) getDoc(ctx context.Context, what, path string, doc any) error {
	return c.do(ctx, what, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		_, err := sc.Get(ctx, sc.ServiceURL(path), doc, nil)
		return err
	})
}
