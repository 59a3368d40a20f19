package nova

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// Nova's os-interface, with [neutron]: a server's ports as Neutron shows
// them, and the attach and detach of ports on a running server. The API
// checks the request as Nova does and commits it
// (fsm.RequestInterfaceAction); the server's owner host carries it out,
// each side effect after its intent at its epoch (compute.InterfaceActor),
// and commits the outcome. An attach answers once the owner is done, as
// Nova's call does; a detach is accepted (202) at once, as Nova casts it.

// interfaceWait bounds how long an attach waits for the owner.
const interfaceWait = 2 * time.Minute

// interfaceCommands are the commands of os-interface: used once every
// live peer knows them.
var interfaceCommands = []fsm.CommandType{fsm.CmdRequestInterfaceAction, fsm.CmdFinishInterfaceAction,
	fsm.CmdSetPortIntent, fsm.CmdRecordServerPort, fsm.CmdForgetServerPort}

// interfaceServer is the server of an os-interface request, visible to
// the caller; 501 without [neutron], as Nova without a network API.
func (h *Handlers) interfaceServer(c echo.Context) (fsm.Server, error) {
	v, err := h.serverForEdit(c)
	if err != nil {
		return v, err
	}
	if h.networks == nil {
		return v, echo.NewHTTPError(http.StatusNotImplemented, "Network driver does not support this function.")
	}
	return v, nil
}

// interfaceView is Nova's view of one interface attachment.
func interfaceView(c echo.Context, p neutron.Port) map[string]any {
	ips := make([]map[string]any, 0, len(p.FixedIPs))
	for _, ip := range p.FixedIPs {
		ips = append(ips, map[string]any{"subnet_id": ip.SubnetID, "ip_address": ip.IPAddress})
	}
	v := map[string]any{"net_id": p.NetworkID, "port_id": p.ID, "mac_addr": p.MACAddress, "port_state": p.Status, "fixed_ips": ips}
	if mvAtLeast(c, 2, 70) {
		v["tag"] = nil // corral keeps no interface tags (Nova's Ironic driver takes none)
	}
	return v
}

// ListInterfaces is GET /servers/{id}/os-interface: the ports Neutron
// lists with the server as their device.
func (h *Handlers) ListInterfaces(c echo.Context) error {
	v, err := h.interfaceServer(c)
	if err != nil {
		return err
	}
	ports, err := h.networks.Ports(c.Request().Context(), neutron.PortFilter{DeviceID: v.ID})
	if err != nil {
		return neutronUnavailable("the ports of server "+v.ID, err)
	}
	out := make([]map[string]any, 0, len(ports))
	for _, p := range ports {
		out = append(out, interfaceView(c, p))
	}
	return c.JSON(http.StatusOK, map[string]any{"interfaceAttachments": out})
}

// GetInterface is GET /servers/{id}/os-interface/{port_id}.
func (h *Handlers) GetInterface(c echo.Context) error {
	v, err := h.interfaceServer(c)
	if err != nil {
		return err
	}
	return h.showInterface(c, v, c.Param("port_id"), http.StatusOK)
}

func (h *Handlers) showInterface(c echo.Context, v fsm.Server, id string, code int) error {
	p, err := h.networks.Port(c.Request().Context(), id)
	switch {
	case errors.Is(err, neutron.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Port id %s could not be found.", id))
	case err != nil:
		return neutronUnavailable("port "+id, err)
	case p.DeviceID != v.ID:
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Instance %s does not have a port with id %s", v.ID, id))
	}
	return c.JSON(code, map[string]any{"interfaceAttachment": interfaceView(c, p)})
}

// attachBody is POST /servers/{id}/os-interface's body.
type attachBody struct {
	InterfaceAttachment *struct {
		NetID    *string `json:"net_id"`
		PortID   *string `json:"port_id"`
		FixedIPs []struct {
			IPAddress *string `json:"ip_address"`
		} `json:"fixed_ips"`
		Tag *string `json:"tag"`
	} `json:"interfaceAttachment"`
}

// AttachInterface is POST /servers/{id}/os-interface: a port on a network
// (with a fixed address or not), the caller's port, or, with neither, a
// port on the one network the project may use. It answers with the
// attachment once the owner attached it (200), Nova's 500 when it could
// not.
func (h *Handlers) AttachInterface(c echo.Context) error {
	var body attachBody
	if c.Request().ContentLength != 0 {
		if err := core.BindStrict(c, &body); err != nil {
			return err
		}
	}
	v, err := h.interfaceServer(c)
	if err != nil {
		return err
	}
	cmd := &fsm.RequestInterfaceAction{ID: v.ID, Kind: fsm.ActionAttachInterface, Admin: core.CallerOf(c).Role == core.RoleAdmin}
	if a := body.InterfaceAttachment; a != nil {
		if a.NetID != nil {
			if uuid.Validate(*a.NetID) != nil {
				return invalidInput("net_id", *a.NetID, fmt.Sprintf("'%s' is not a 'uuid'", shown(*a.NetID)))
			}
			cmd.NetworkID = *a.NetID
		}
		if a.PortID != nil {
			if uuid.Validate(*a.PortID) != nil {
				return invalidInput("port_id", *a.PortID, fmt.Sprintf("'%s' is not a 'uuid'", shown(*a.PortID)))
			}
			cmd.PortID = *a.PortID
		}
		if a.FixedIPs != nil {
			if len(a.FixedIPs) != 1 {
				return invalidInput("fixed_ips", fmt.Sprintf("%d addresses", len(a.FixedIPs)), "exactly one is allowed")
			}
			ip := a.FixedIPs[0].IPAddress
			if ip == nil {
				return core.BadRequest("Invalid input for field/attribute 0. Value: {}. 'ip_address' is a required property")
			}
			if !isIPAddress(*ip) {
				return invalidInput("ip_address", *ip, fmt.Sprintf("'%s' is not a 'ipv4' nor a 'ipv6'", shown(*ip)))
			}
			cmd.FixedIP = *ip
		}
		if a.Tag != nil {
			if !mvAtLeast(c, 2, 49) {
				return core.BadRequest("Invalid input for field/attribute interfaceAttachment. Additional properties are not allowed ('tag' was unexpected)")
			}
			// Nova's Ironic driver takes no tagged attach.
			return core.BadRequest("Tagged network interface attachment is not supported for this server instance.")
		}
	}
	switch {
	case cmd.NetworkID != "" && cmd.PortID != "":
		return core.BadRequest("Must not input both network_id and port_id")
	case cmd.FixedIP != "" && cmd.NetworkID == "":
		return core.BadRequest("Must input network_id when request IP address")
	}
	if err := h.checkInterface(c, v, cmd); err != nil {
		return err
	}
	if !h.known(interfaceCommands...) {
		return notYet("An interface attach")
	}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return interfaceConflict(err, v.ID)
	}
	req, err := h.awaitInterface(c, v.ID, core.RequestID(c))
	if err != nil {
		return err
	}
	if req.Fault != "" || req.PortID == "" {
		return echo.NewHTTPError(http.StatusInternalServerError, fmt.Sprintf("Failed to attach network adapter device to %s", v.ID))
	}
	return h.showInterface(c, v, req.PortID, http.StatusOK)
}

// checkInterface checks an attach's network or port in Neutron as Nova
// does (os-interface answers 404 where a boot answers 400), and picks the
// project's one network when the request names neither.
func (h *Handlers) checkInterface(c echo.Context, v fsm.Server, cmd *fsm.RequestInterfaceAction) error {
	ctx := c.Request().Context()
	cl := core.CallerOf(c)
	admin := cl.SeesEveryProject()
	switch {
	case cmd.PortID != "":
		p, err := h.networks.Port(ctx, cmd.PortID)
		switch {
		case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && p.ProjectID != v.ProjectID:
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Port id %s could not be found.", cmd.PortID))
		case err != nil:
			return neutronUnavailable("port "+cmd.PortID, err)
		case p.DeviceID != "":
			return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Port %s is still in use.", cmd.PortID))
		}
	case cmd.NetworkID != "":
		n, err := h.networks.Network(ctx, cmd.NetworkID)
		switch {
		case errors.Is(err, neutron.ErrNotFound), err == nil && !admin && !n.VisibleTo(v.ProjectID):
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Network %s could not be found.", cmd.NetworkID))
		case err != nil:
			return neutronUnavailable("network "+cmd.NetworkID, err)
		}
		if cmd.FixedIP != "" {
			taken, err := h.networks.Ports(ctx, neutron.PortFilter{NetworkID: cmd.NetworkID, FixedIP: cmd.FixedIP})
			if err != nil {
				return neutronUnavailable("the ports of network "+cmd.NetworkID, err)
			}
			if len(taken) > 0 {
				return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("Fixed IP address %s is already in use on instance %s.", cmd.FixedIP, taken[0].DeviceID))
			}
		}
	default:
		avail, err := h.availableNetworks(ctx, v.ProjectID)
		if err != nil {
			return err
		}
		switch len(avail) {
		case 0:
			return core.BadRequest("No specific network was requested and none are available for project '%s'.", v.ProjectID)
		case 1:
			cmd.NetworkID = avail[0].ID
		default:
			return core.BadRequest("Multiple possible networks found, use a Network ID to be more specific.")
		}
	}
	return nil
}

// DetachInterface is DELETE /servers/{id}/os-interface/{port_id}:
// accepted (202) once committed; the owner detaches the port.
func (h *Handlers) DetachInterface(c echo.Context) error {
	v, err := h.interfaceServer(c)
	if err != nil {
		return err
	}
	if !h.known(interfaceCommands...) {
		return notYet("An interface detach")
	}
	cmd := &fsm.RequestInterfaceAction{ID: v.ID, Kind: fsm.ActionDetachInterface, PortID: c.Param("port_id"),
		Admin: core.CallerOf(c).Role == core.RoleAdmin}
	if err := h.st.Propose(c, cmd); err != nil {
		return interfaceConflict(err, v.ID)
	}
	return c.NoContent(http.StatusAccepted)
}

// interfaceConflict maps the fsm's refusal of an interface request to
// Nova's answer.
func interfaceConflict(err error, id string) error {
	var msg string
	if e := err.Error(); strings.Contains(e, ": ") {
		msg = e[strings.Index(e, ": ")+2:]
	}
	switch {
	case errors.Is(err, fsm.ErrNotFound) && strings.HasPrefix(msg, "Port "):
		return echo.NewHTTPError(http.StatusNotFound, msg)
	case errors.Is(err, fsm.ErrInvalid):
		return core.BadRequest("%s", msg)
	}
	return actionConflict(err, id)
}

// awaitInterface waits until the owner finished the interface request of
// request id on server sid, and returns it; the request dropped (the
// server deleted or reset) or not finished within interfaceWait is
// Nova's 500.
func (h *Handlers) awaitInterface(c echo.Context, sid, requestID string) (fsm.InterfaceRequest, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), interfaceWait)
	defer cancel()
	store := h.st.Store()
	for {
		idx := store.AppliedIndex()
		in := store.ServerNet(sid).Interface
		if in == nil || in.RequestID != requestID {
			return fsm.InterfaceRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("Failed to attach network adapter device to %s", sid))
		}
		if in.Done {
			return *in, nil
		}
		if s, err := store.Server(sid); err != nil || s.Action == nil || s.Action.Kind != in.Kind || !s.Action.RequestedAt.Equal(in.RequestedAt) {
			return fsm.InterfaceRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("Failed to attach network adapter device to %s: the attach was dropped", sid))
		}
		if err := store.WaitApplied(ctx, idx+1); err != nil {
			return fsm.InterfaceRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("Failed to attach network adapter device to %s: its owner did not finish within %s; the attach goes on", sid, interfaceWait))
		}
	}
}
