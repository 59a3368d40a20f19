package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

func (h *Handlers) hostViews() []wire.HostView {
	load := h.st.Store().HostLoad()
	hosts := h.st.Store().Hosts()
	out := make([]wire.HostView, 0, len(hosts))
	for _, host := range hosts {
		out = append(out, hostView(host, load[host.Name]))
	}
	return out
}

// ListHosts is GET /v1/hosts: the hosts and the cloud's bare-metal
// capacity per resource class.
func (h *Handlers) ListHosts(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.HostsResponse{Hosts: h.hostViews(), Capacity: core.Capacity(h.st.Store())})
}

// GetHost is GET /v1/hosts/{name}.
func (h *Handlers) GetHost(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	for _, hv := range h.hostViews() {
		if hv.Name == c.Param("name") {
			return c.JSON(http.StatusOK, wire.HostResponse{Host: hv})
		}
	}
	_, err := h.st.Store().Host(c.Param("name"))
	return err
}

// DrainHost is POST /v1/hosts/{name}/drain (drained) or undrain: a
// drained host takes no new servers and the leader moves its servers away.
func (h *Handlers) DrainHost(drained bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		if _, err := h.st.Store().Host(name); err != nil {
			return err
		}
		if err := h.st.Propose(c, &fsm.SetHostDrain{Name: name, Drained: drained}); err != nil {
			return err
		}
		return h.GetHost(c)
	}
}

// ForceDown is POST /v1/hosts/{name}/force-down: it marks a host down at
// once, for a host an operator knows is dead; the leader then reassigns
// its servers.
func (h *Handlers) ForceDown(c echo.Context) error {
	name := c.Param("name")
	if _, err := h.st.Store().Host(name); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.SetHostStatus{Name: name, Status: fsm.HostDown}); err != nil {
		return err
	}
	return h.GetHost(c)
}
