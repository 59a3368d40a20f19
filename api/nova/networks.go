package nova

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// NetworkService is the Neutron a boot's networks are checked against
// ([neutron]); *neutron.Client implements it. It reads as corral's
// service user, which sees every project: what the caller may use is
// decided here, as Neutron would decide it for the caller (its project's
// networks and the shared ones, its project's ports; an admin any).
type NetworkService interface {
	Network(ctx context.Context, id string) (neutron.Network, error)
	Port(ctx context.Context, id string) (neutron.Port, error)
	// NetworksFor lists the networks a project may use: its own and
	// the shared ones.
	NetworksFor(ctx context.Context, project string) ([]neutron.Network, error)
	Ports(ctx context.Context, f neutron.PortFilter) ([]neutron.Port, error)
	// SecurityGroups lists security groups (of any project).
	SecurityGroups(ctx context.Context, f neutron.SecurityGroupFilter) ([]neutron.SecurityGroup, error)
}

var _ NetworkService = (*neutron.Client)(nil)

// checkNetworks checks a boot's requested networks against Neutron, as
// Nova's validate_networks does, and returns the networks the server gets
// ports on: a network the caller cannot see is Nova's 400 "Network ...
// could not be found.", a port it cannot see "Port id ... could not be
// found." (400), a port another device uses "Port ... is still in use."
// (409), a fixed address a port of the network has "Fixed IP address ...
// is already in use on instance ..." (400). "auto", and networks left out
// (below 2.37), take the one network the caller's project may use (its
// own or a shared one): several are Nova's 409 NetworkAmbiguous; none is
// no port when left out, and for "auto" Nova's 400 when Neutron cannot
// allocate one (corral asks for no auto-allocated topology). "none" is no
// port. Without [neutron] it checks nothing and returns nets.
func (h *Handlers) checkNetworks(c echo.Context, nets []fsm.Network, form netsForm) ([]fsm.Network, error) {
	if h.networks == nil {
		return nets, nil
	}
	cl := core.CallerOf(c)
	admin := cl.SeesEveryProject()
	ctx := c.Request().Context()
	switch form {
	case netsNone:
		return nil, nil
	case netsAuto, netsOmitted:
		avail, err := h.availableNetworks(ctx, cl.Project)
		if err != nil {
			return nil, err
		}
		switch {
		case len(avail) > 1:
			return nil, fmt.Errorf("%w: Multiple possible networks found, use a Network ID to be more specific.", fsm.ErrConflict)
		case len(avail) == 1:
			return []fsm.Network{{UUID: avail[0].ID}}, nil
		case form == netsAuto:
			return nil, core.BadRequest("Unable to automatically allocate a network for project %s", cl.Project)
		}
		return nil, nil
	}
	for _, want := range nets {
		if want.Port != "" {
			p, err := h.networks.Port(ctx, want.Port)
			switch {
			case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && p.ProjectID != cl.Project:
				return nil, core.BadRequest("Port id %s could not be found.", want.Port)
			case err != nil:
				return nil, neutronUnavailable("port "+want.Port, err)
			case p.DeviceID != "":
				return nil, fmt.Errorf("%w: Port %s is still in use.", fsm.ErrConflict, want.Port)
			}
			continue
		}
		n, err := h.networks.Network(ctx, want.UUID)
		switch {
		case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && !n.VisibleTo(cl.Project):
			return nil, core.BadRequest("Network %s could not be found.", want.UUID)
		case err != nil:
			return nil, neutronUnavailable("network "+want.UUID, err)
		}
		if want.FixedIP != "" {
			taken, err := h.networks.Ports(ctx, neutron.PortFilter{NetworkID: want.UUID, FixedIP: want.FixedIP})
			if err != nil {
				return nil, neutronUnavailable("the ports of network "+want.UUID, err)
			}
			if len(taken) > 0 {
				return nil, core.BadRequest("Fixed IP address %s is already in use on instance %s.", want.FixedIP, taken[0].DeviceID)
			}
		}
	}
	return nets, nil
}

// availableNetworks are the networks a user of project may use, as Nova
// lists them: its own and the shared ones (a caller without a project, a
// static token, the shared ones).
func (h *Handlers) availableNetworks(ctx context.Context, project string) ([]neutron.Network, error) {
	nets, err := h.networks.NetworksFor(ctx, project)
	if err != nil {
		return nil, neutronUnavailable("the networks of project "+project, err)
	}
	return nets, nil
}

func neutronUnavailable(what string, err error) error {
	return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("cannot check %s in Neutron: %v", what, err))
}
