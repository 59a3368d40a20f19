package neutron

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsbinding"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// CreatedByCorral is the description of every port corral creates, set in
// the create request itself: a port with it and no live server as its
// device is a leftover of corral's (the leader's reaper deletes it). A
// port a user passed in keeps its own description.
const CreatedByCorral = "corral"

// vnic types corral asks for (binding:vnic_type).
const (
	VNICBaremetal = "baremetal" // a bare-metal node's NIC, bound by Ironic
	VNICNormal    = "normal"    // a VM's virtual NIC on a hypervisor host
)

// VIFUnbound is the binding:vif_type of a port Neutron has tried no
// binding for (no host, or a binding that failed before it was tried).
const VIFUnbound = "unbound"

// FixedIP is one address of a port.
type FixedIP struct {
	SubnetID  string `json:"subnet_id,omitempty"`
	IPAddress string `json:"ip_address,omitempty"`
}

// Port is what corral reads of a Neutron port. The binding attributes are
// shown to admins only (corral's service user is one).
type Port struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	NetworkID    string    `json:"network_id"`
	ProjectID    string    `json:"project_id"`
	DeviceID     string    `json:"device_id"`
	DeviceOwner  string    `json:"device_owner"`
	MACAddress   string    `json:"mac_address"`
	Status       string    `json:"status"` // DOWN until a mechanism driver binds it (ACTIVE)
	AdminStateUp bool      `json:"admin_state_up"`
	FixedIPs     []FixedIP `json:"fixed_ips"`
	VNICType     string    `json:"binding:vnic_type"`
	HostID       string    `json:"binding:host_id"`
	// VIFType is unbound (no host), binding_failed (a host no driver binds) or the bound
	// driver's type; neither unbound nor binding_failed stops Ironic from using the port.
	VIFType string         `json:"binding:vif_type"`
	Profile map[string]any `json:"binding:profile"`
	// SecurityGroups are the ids of the port's security groups.
	SecurityGroups []string `json:"security_groups"`
	// PortSecurityEnabled is the port_security extension's switch (nil
	// without the extension: on).
	PortSecurityEnabled *bool `json:"port_security_enabled"`
	// IPAllocation is "deferred" for a port of a routed network whose
	// address comes with its host.
	IPAllocation string `json:"ip_allocation"`
}

// SecurityGroupsApply reports whether security groups can be applied to
// the port, as Nova judges it: port security on, and an address (or one
// deferred).
func (p Port) SecurityGroupsApply() bool {
	return (p.PortSecurityEnabled == nil || *p.PortSecurityEnabled) && (len(p.FixedIPs) > 0 || p.IPAllocation == "deferred")
}

// PortCreate is a new port. NetworkID is required; ProjectID is the owner
// (the server's project; "" means corral's own); FixedIPs empty means one
// address from the network's pool; MACAddress "" means Neutron's choice.
type PortCreate struct {
	NetworkID, ProjectID, Name   string
	Description                  string // CreatedByCorral for corral's own
	DeviceID, DeviceOwner        string
	VNICType, HostID, MACAddress string
	FixedIPs                     []FixedIP
	Profile                      map[string]any
	// SecurityGroups are the port's groups (ids); empty: Neutron gives
	// it its project's default group.
	SecurityGroups []string
}

// PortUpdate changes the set fields of a port.
type PortUpdate struct {
	Name, DeviceID, DeviceOwner, MACAddress, HostID *string
	VNICType                                        string
	Profile                                         map[string]any
	// SecurityGroups, when set, replaces the port's groups (ids).
	SecurityGroups *[]string
}

// PortFilter narrows a port listing; zero fields do not filter, but a
// listing must name at least one of them. FixedIP selects the ports that
// have that address.
type PortFilter struct {
	DeviceID, NetworkID, ProjectID, DeviceOwner, MACAddress, FixedIP string
}

func (f PortFilter) empty() bool { return f == PortFilter{} }

// CreatePort creates a port.
func (c *Client) CreatePort(ctx context.Context, p PortCreate) (Port, error) {
	if p.NetworkID == "" {
		return Port{}, fmt.Errorf("%w: a port needs a network", ErrInvalid)
	}
	base := ports.CreateOpts{NetworkID: p.NetworkID, ProjectID: p.ProjectID, Name: p.Name, Description: p.Description, DeviceID: p.DeviceID,
		DeviceOwner: p.DeviceOwner, MACAddress: p.MACAddress}
	if len(p.FixedIPs) > 0 {
		ips := make([]ports.IP, len(p.FixedIPs))
		for i, f := range p.FixedIPs {
			ips[i] = ports.IP{SubnetID: f.SubnetID, IPAddress: f.IPAddress}
		}
		base.FixedIPs = ips
	}
	if len(p.SecurityGroups) > 0 {
		groups := slices.Clone(p.SecurityGroups)
		base.SecurityGroups = &groups
	}
	opts := portsbinding.CreateOptsExt{CreateOptsBuilder: base, HostID: p.HostID, VNICType: p.VNICType, Profile: p.Profile}
	var out Port
	err := c.do(ctx, "creating a port on network "+p.NetworkID, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Create(ctx, sc, opts).ExtractIntoStructPtr(&out, "port")
	})
	return out, err
}

// Port reads one port.
func (c *Client) Port(ctx context.Context, id string) (Port, error) {
	var out Port
	err := c.do(ctx, "port "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Get(ctx, sc, id).ExtractIntoStructPtr(&out, "port")
	})
	return out, err
}

// Ports lists the ports f selects (every page), e.g. a server's by device id.
func (c *Client) Ports(ctx context.Context, f PortFilter) ([]Port, error) {
	if f.empty() {
		return nil, fmt.Errorf("%w: a port listing needs a device, network, project, owner or MAC to filter by", ErrInvalid)
	}
	var out []Port
	err := c.do(ctx, "listing ports", func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		opts := ports.ListOpts{DeviceID: f.DeviceID, NetworkID: f.NetworkID, ProjectID: f.ProjectID,
			DeviceOwner: f.DeviceOwner, MACAddress: f.MACAddress}
		if f.FixedIP != "" {
			opts.FixedIPs = []ports.FixedIPOpts{{IPAddress: f.FixedIP}}
		}
		pages, err := ports.List(sc, opts).AllPages(ctx)
		if err != nil {
			return err
		}
		return ports.ExtractPortsInto(pages, &out)
	})
	return out, err
}

// UpdatePort changes a port and returns it as it is then.
func (c *Client) UpdatePort(ctx context.Context, id string, u PortUpdate) (Port, error) {
	opts := portsbinding.UpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{Name: u.Name, DeviceID: u.DeviceID, DeviceOwner: u.DeviceOwner,
			MACAddress: u.MACAddress, SecurityGroups: u.SecurityGroups},
		HostID: u.HostID, VNICType: u.VNICType, Profile: u.Profile}
	var out Port
	err := c.do(ctx, "updating port "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Update(ctx, sc, id, opts).ExtractIntoStructPtr(&out, "port")
	})
	return out, err
}

// UnbindPort detaches a port from its server and host, as Nova does for a
// port the user passed in and keeps: device_id, device_owner and
// binding:host_id emptied, binding:profile cleared.
func (c *Client) UnbindPort(ctx context.Context, id string) (Port, error) {
	empty := ""
	return c.UpdatePort(ctx, id, PortUpdate{DeviceID: &empty, DeviceOwner: &empty, HostID: &empty,
		Profile: map[string]any{}})
}

// resetMAC is the body of a MAC reset: {"port": {"mac_address": null}}.
type resetMAC struct{}

func (resetMAC) ToPortUpdateMap() (map[string]any, error) {
	return map[string]any{"port": map[string]any{"mac_address": nil}}, nil
}

// ResetMAC gives the port a new MAC of Neutron's choice (mac_address null,
// Neutron's port-mac-address-regenerate), as Ironic does when it unbinds
// a bare-metal port: a port that keeps the MAC of a node's NIC stops the
// next port on its network from taking that MAC. Neutron allows it only
// while the port is unbound (or its binding failed).
func (c *Client) ResetMAC(ctx context.Context, id string) (Port, error) {
	var out Port
	err := c.do(ctx, "resetting the MAC of port "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Update(ctx, sc, id, resetMAC{}).ExtractIntoStructPtr(&out, "port")
	})
	return out, err
}

// DeletePort deletes a port; a port already gone is no error.
func (c *Client) DeletePort(ctx context.Context, id string) error {
	err := c.do(ctx, "deleting port "+id, func(ctx context.Context, sc *gophercloud.ServiceClient) error {
		return ports.Delete(ctx, sc, id).ExtractErr()
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
