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

// The bounds of the microversions, and the headers that ask for one, in
// their canonical form (core.Server.Group runs Negotiate on every compute
// request).
var (
	minVersion, _ = core.ParseMicroversion(MinVersion)
	maxVersion, _ = core.ParseMicroversion(MaxVersion)

	hdrAPIVersion     = http.CanonicalHeaderKey("OpenStack-API-Version")
	hdrNovaAPIVersion = http.CanonicalHeaderKey("X-OpenStack-Nova-API-Version")
	hdrVary           = http.CanonicalHeaderKey("Vary")
)

// Negotiate negotiates the compute microversion from OpenStack-API-Version
// or X-OpenStack-Nova-API-Version, like Nova, and refuses a body that is
// not JSON (415): the compute API's step before its handlers.
func Negotiate(c echo.Context) error {
	h := c.Request().Header
	req := ""
	if v := first(h[hdrAPIVersion]); v != "" {
		for part := range strings.SplitSeq(v, ",") {
			if svc, ver, ok := strings.Cut(strings.TrimSpace(part), " "); ok && strings.EqualFold(svc, "compute") {
				req = strings.TrimSpace(ver)
			}
		}
	} else if v := first(h[hdrNovaAPIVersion]); v != "" {
		req = v
	}
	ver := minVersion
	switch {
	case req == "":
	case strings.EqualFold(req, "latest"):
		ver = maxVersion
	default:
		v, err := core.ParseMicroversion(req)
		if err != nil {
			return core.BadRequest("%v", err)
		}
		if v.Less(minVersion) || maxVersion.Less(v) {
			return echo.NewHTTPError(http.StatusNotAcceptable,
				fmt.Sprintf("Version %s is not supported by the API. Minimum is %s and maximum is %s.", req, MinVersion, MaxVersion))
		}
		ver = v
	}
	c.Set(ctxMicroversion, ver)
	rh := c.Response().Header()
	vh := versionHeaders[ver.Minor] // ver is 2.1 to 2.79
	rh[hdrAPIVersion], rh[hdrNovaAPIVersion] = vh.api, vh.nova
	if vary := rh[hdrVary]; len(vary) > 0 {
		rh[hdrVary] = append(vary, varyVersions[0])
	} else {
		rh[hdrVary] = varyVersions
	}
	// Nova refuses a Content-Type it does not read on every request,
	// with a body or not.
	return core.CheckContentType(c.Request())
}

// versionHeaders are the answer's headers of each microversion 2.x, by
// x, and varyVersions its Vary: made once, shared by the answers (a
// header's values are replaced, never changed in place; cap = len, so
// an append copies).
var (
	versionHeaders = func() []struct{ api, nova []string } {
		out := make([]struct{ api, nova []string }, maxVersion.Minor+1)
		for i := minVersion.Minor; i <= maxVersion.Minor; i++ {
			v := core.Microversion{Major: 2, Minor: i}.String()
			out[i].api, out[i].nova = []string{"compute " + v}, []string{v}
		}
		return out
	}()
	varyVersions = []string{"OpenStack-API-Version, X-OpenStack-Nova-API-Version"}
)

// first is the first of a header's values ("" for none).
func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
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
