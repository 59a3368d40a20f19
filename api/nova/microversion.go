package nova

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// Compute API microversions corral answers to.
const (
	MinVersion = "2.1"
	MaxVersion = "2.79"
)

const ctxMicroversion = "microversion"

// VersionMiddleware negotiates the compute microversion from
// OpenStack-API-Version or X-OpenStack-Nova-API-Version, like Nova, and
// refuses a body that is not JSON (415).
func VersionMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	minV, _ := core.ParseMicroversion(MinVersion)
	maxV, _ := core.ParseMicroversion(MaxVersion)
	return func(c echo.Context) error {
		h := c.Request().Header
		req := ""
		if v := h.Get("OpenStack-API-Version"); v != "" {
			for _, part := range strings.Split(v, ",") {
				if svc, ver, ok := strings.Cut(strings.TrimSpace(part), " "); ok && strings.EqualFold(svc, "compute") {
					req = strings.TrimSpace(ver)
				}
			}
		} else if v := h.Get("X-OpenStack-Nova-API-Version"); v != "" {
			req = v
		}
		ver := minV
		switch {
		case req == "":
		case strings.EqualFold(req, "latest"):
			ver = maxV
		default:
			v, err := core.ParseMicroversion(req)
			if err != nil {
				return core.BadRequest("%v", err)
			}
			if v.Less(minV) || maxV.Less(v) {
				return echo.NewHTTPError(http.StatusNotAcceptable,
					fmt.Sprintf("Version %s is not supported by the API. Minimum is %s and maximum is %s.", req, MinVersion, MaxVersion))
			}
			ver = v
		}
		c.Set(ctxMicroversion, ver)
		rh := c.Response().Header()
		rh.Set("OpenStack-API-Version", "compute "+ver.String())
		rh.Set("X-OpenStack-Nova-API-Version", ver.String())
		rh.Add("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
		// Nova refuses a Content-Type it does not read on every request,
		// with a body or not.
		if err := core.CheckContentType(c.Request()); err != nil {
			return err
		}
		return next(c)
	}
}

// microversion is the request's compute microversion.
func microversion(c echo.Context) core.Microversion {
	v, _ := c.Get(ctxMicroversion).(core.Microversion)
	return v
}

// mvAtLeast reports whether the request's compute microversion is at least
// major.minor.
func mvAtLeast(c echo.Context, major, minor int) bool {
	return !microversion(c).Less(core.Microversion{Major: major, Minor: minor})
}
