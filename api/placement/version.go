package placement

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// MaxVersion is the newest Placement microversion corral answers to.
const MaxVersion = "1.39"

// Negotiate negotiates the Placement microversion from
// OpenStack-API-Version: Placement's step before its handlers.
func Negotiate(c echo.Context) error {
	ver := "1.0"
	if v := c.Request().Header.Get("OpenStack-API-Version"); v != "" {
		svc, want, _ := strings.Cut(strings.TrimSpace(v), " ")
		if strings.EqualFold(svc, "placement") {
			switch want = strings.TrimSpace(want); {
			case want == "latest":
				ver = MaxVersion
			default:
				mv, err := core.ParseMicroversion(want)
				maxV, _ := core.ParseMicroversion(MaxVersion)
				if err != nil || mv.Major != 1 || maxV.Less(mv) {
					return echo.NewHTTPError(http.StatusNotAcceptable, fmt.Sprintf("Unacceptable version header: %s (this Placement serves 1.0 to %s)", want, MaxVersion))
				}
				ver = mv.String()
			}
		}
	}
	c.Response().Header().Set("OpenStack-API-Version", "placement "+ver)
	c.Response().Header().Add("Vary", "OpenStack-API-Version")
	return nil
}

// Root is GET /placement: the version document.
func (h *Handlers) Root(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"versions": []map[string]any{{
		"id": "v1.0", "min_version": "1.0", "max_version": MaxVersion, "status": "CURRENT",
		"links": []wire.Link{{Rel: "self", Href: core.BaseURL(c) + wire.PlacementPrefix + "/"}},
	}}})
}
