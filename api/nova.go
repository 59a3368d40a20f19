package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

const novaPrefix = "/compute/v2.1"

// Compute API microversions corral answers to.
const (
	novaMinVersion = "2.1"
	novaMaxVersion = "2.79"
)

const ctxMicroversion = "microversion"

type microversion struct{ major, minor int }

func parseMicroversion(s string) (microversion, error) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok {
		return microversion{}, fmt.Errorf("microversion %q is not MAJOR.MINOR", s)
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return microversion{}, fmt.Errorf("microversion %q is not MAJOR.MINOR", s)
	}
	return microversion{a, b}, nil
}

func (v microversion) less(o microversion) bool {
	return v.major < o.major || (v.major == o.major && v.minor < o.minor)
}

func (v microversion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// novaVersionMiddleware negotiates the compute microversion from
// OpenStack-API-Version or X-OpenStack-Nova-API-Version, like Nova.
func (s *Server) novaVersionMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	minV, _ := parseMicroversion(novaMinVersion)
	maxV, _ := parseMicroversion(novaMaxVersion)
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
			v, err := parseMicroversion(req)
			if err != nil {
				return badRequest("%v", err)
			}
			if v.less(minV) || maxV.less(v) {
				return echo.NewHTTPError(http.StatusNotAcceptable,
					fmt.Sprintf("Version %s is not supported by the API. Minimum is %s and maximum is %s.", req, novaMinVersion, novaMaxVersion))
			}
			ver = v
		}
		c.Set(ctxMicroversion, ver)
		rh := c.Response().Header()
		rh.Set("OpenStack-API-Version", "compute "+ver.String())
		rh.Set("X-OpenStack-Nova-API-Version", ver.String())
		rh.Add("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
		return next(c)
	}
}

type link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

func baseURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host
}

func (s *Server) novaVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"version": map[string]any{
		"id": "v2.1", "status": "CURRENT", "version": novaMaxVersion, "min_version": novaMinVersion,
		"updated": "2013-07-23T11:33:21Z",
		"links":   []link{{Rel: "self", Href: baseURL(c) + novaPrefix + "/"}},
	}})
}
