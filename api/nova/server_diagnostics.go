package nova

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// ServerDiagnostics is GET /servers/{id}/diagnostics, an admin's (Nova's
// policy os_compute_api:os-server-diagnostics). Nova's Ironic driver has
// no diagnostics of a node, nor has corral's VM driver: Nova answers 501,
// at every microversion.
func (h *Handlers) ServerDiagnostics(c echo.Context) error {
	if _, err := h.serverForEdit(c); err != nil {
		return err
	}
	if core.CallerOf(c).Role != core.RoleAdmin {
		return fmt.Errorf("%w: Policy doesn't allow os_compute_api:os-server-diagnostics to be performed.", core.ErrForbidden)
	}
	return echo.NewHTTPError(http.StatusNotImplemented, "The requested functionality is not supported.")
}
