package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// A server's addresses, /servers/{id}/ips, as Nova's ips controller
// serves them from the server's addresses.

// ListServerIPs is GET /servers/{id}/ips.
func (h *Handlers) ListServerIPs(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"addresses": serverAddresses(v, h.st.Store().ServerNet(v.ID), false)})
}

// GetServerIPs is GET /servers/{id}/ips/{network}: the addresses of one
// network, 404 when the server is not on it.
func (h *Handlers) GetServerIPs(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	network := c.Param("network")
	addrs, ok := serverAddresses(v, h.st.Store().ServerNet(v.ID), false)[network]
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Instance is not a member of specified network")
	}
	return c.JSON(http.StatusOK, map[string]any{network: addrs})
}
