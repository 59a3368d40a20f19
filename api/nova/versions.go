package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// versionDoc describes the one compute API version corral serves, v2.1.
func versionDoc(c echo.Context) map[string]any {
	return map[string]any{
		"id": "v2.1", "status": "CURRENT", "version": MaxVersion, "min_version": MinVersion,
		"updated": "2013-07-23T11:33:21Z",
		"links":   []wire.Link{{Rel: "self", Href: core.BaseURL(c) + wire.ComputePrefix + "/"}},
	}
}

// Version is GET /compute/v2.1: the version the API speaks.
func (h *Handlers) Version(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"version": versionDoc(c)})
}

// Versions is GET / and GET /compute: the compute API versions corral
// serves (v2.1 only), public as in Nova.
func (h *Handlers) Versions(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"versions": []map[string]any{versionDoc(c)}})
}
