package neutron

import (
	"context"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// Network is what corral reads of a Neutron network. The provider
// attributes are shown to admins only (corral's service user is one).
type Network struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	ProjectID       string   `json:"project_id"`
	Status          string   `json:"status"`
	AdminStateUp    bool     `json:"admin_state_up"`
	Shared          bool     `json:"shared"`
	External        bool     `json:"router:external"`
	Subnets         []string `json:"subnets"`
	MTU             int      `json:"mtu"`
	NetworkType     string   `json:"provider:network_type"`
	PhysicalNetwork string   `json:"provider:physical_network"`
	SegmentationID  *int     `json:"provider:segmentation_id"`
	// PortSecurityEnabled is the port_security extension's default for
	// the network's ports (nil without the extension: on).
	PortSecurityEnabled *bool `json:"port_security_enabled"`
}

// VisibleTo reports whether a (non-admin) user of project may use the
// network, as Nova decides it: it is shared, or the project's own.
func (n Network) VisibleTo(project string) bool {
	return n.Shared || (project != "" && n.ProjectID == project)
}

// Subnet is what corral reads of a Neutron subnet.
type Subnet struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	NetworkID  string `json:"network_id"`
	ProjectID  string `json:"project_id"`
	CIDR       string `json:"cidr"`
	GatewayIP  string `json:"gateway_ip"`
	IPVersion  int    `json:"ip_version"`
	EnableDHCP bool   `json:"enable_dhcp"`
}

// NetworkFilter narrows a network listing; zero fields do not filter.
type NetworkFilter struct {
	ID, Name, ProjectID string
	Shared              *bool
}

// Network reads one network.
func (c *Client) Network(ctx context.Context, id string) (Network, error) {
	var n Network
	err := c.do(ctx, "network "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return networks.Get(ctx, sc, id).ExtractIntoStructPtr(&n, "network")
	})
	return n, err
}

// Networks lists the networks f selects (all of them, every page).
func (c *Client) Networks(ctx context.Context, f NetworkFilter) ([]Network, error) {
	var out []Network
	err := c.do(ctx, "listing networks", func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		pages, err := networks.List(sc, networks.ListOpts{ID: f.ID, Name: f.Name, ProjectID: f.ProjectID,
			Shared: f.Shared}).AllPages(ctx)
		if err != nil {
			return err
		}
		return networks.ExtractNetworksInto(pages, &out)
	})
	return out, err
}

// NetworksFor lists the networks a user of project may use (Nova's
// "available networks"): the project's own and the shared ones, the
// project's first, each once; for no project (a caller that has none),
// the shared ones.
func (c *Client) NetworksFor(ctx context.Context, project string) ([]Network, error) {
	var own []Network
	if project != "" {
		var err error
		if own, err = c.Networks(ctx, NetworkFilter{ProjectID: project}); err != nil {
			return nil, err
		}
	}
	yes := true
	shared, err := c.Networks(ctx, NetworkFilter{Shared: &yes})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(own))
	for _, n := range own {
		seen[n.ID] = true
	}
	for _, n := range shared {
		if !seen[n.ID] {
			own = append(own, n)
		}
	}
	return own, nil
}

// Subnet reads one subnet.
func (c *Client) Subnet(ctx context.Context, id string) (Subnet, error) {
	var s Subnet
	err := c.do(ctx, "subnet "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return subnets.Get(ctx, sc, id).ExtractIntoStructPtr(&s, "subnet")
	})
	return s, err
}
