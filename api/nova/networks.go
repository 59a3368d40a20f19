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
}

var _ NetworkService = (*neutron.Client)(nil)

// checkNetworks checks a boot's requested networks against Neutron, as
// Nova's validate_networks does: a network the caller cannot see is
// Nova's 400 "Network ... could not be found.", a port it cannot see
// "Port id ... could not be found." (400), a port another device uses
// "Port ... is still in use." (409). Without [neutron] it checks nothing.
func (h *Handlers) checkNetworks(c echo.Context, nets []fsm.Network) error {
	if h.networks == nil {
		return nil
	}
	cl := core.CallerOf(c)
	admin := cl.SeesEveryProject()
	ctx := c.Request().Context()
	for _, want := range nets {
		if want.Port != "" {
			p, err := h.networks.Port(ctx, want.Port)
			switch {
			case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && p.ProjectID != cl.Project:
				return core.BadRequest("Port id %s could not be found.", want.Port)
			case err != nil:
				return neutronUnavailable("port "+want.Port, err)
			case p.DeviceID != "":
				return fmt.Errorf("%w: Port %s is still in use.", fsm.ErrConflict, want.Port)
			}
			continue
		}
		n, err := h.networks.Network(ctx, want.UUID)
		switch {
		case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && !n.VisibleTo(cl.Project):
			return core.BadRequest("Network %s could not be found.", want.UUID)
		case err != nil:
			return neutronUnavailable("network "+want.UUID, err)
		}
	}
	return nil
}

func neutronUnavailable(what string, err error) error {
	return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf("cannot check %s in Neutron: %v", what, err))
}
