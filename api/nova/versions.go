package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/wire"
)

// The version documents, as Nova's (nova/api/openstack/compute/versions.py):
// the version list names v2.0 and v2.1, in that order; each version's self
// link answers its own document. corral serves the compute API at v2.1
// only: v2.0 is listed, as Nova lists it, with the document of the legacy
// API that v2.1 replaced (no microversions), and its self link answers
// that document alone. The version documents are not under microversion
// control.

type apiVersion struct {
	id, status, version, minVersion, updated, mediaType string
	prefix                                              string // the path of the version's root
}

var apiVersions = []apiVersion{
	{id: "v2.0", status: "DEPRECATED", updated: "2025-07-04T12:00:00Z",
		mediaType: "application/vnd.openstack.compute+json;version=2", prefix: wire.LegacyComputePrefix},
	{id: "v2.1", status: "CURRENT", version: MaxVersion, minVersion: MinVersion, updated: "2013-07-23T11:33:21Z",
		mediaType: "application/vnd.openstack.compute+json;version=2.1", prefix: wire.ComputePrefix},
}

func (v apiVersion) self(c echo.Context) wire.Link {
	return wire.Link{Rel: "self", Href: core.BaseURL(c) + v.prefix + "/"}
}

// listed is the version as the version list shows it.
func (v apiVersion) listed(c echo.Context) map[string]any {
	return map[string]any{"id": v.id, "status": v.status, "version": v.version, "min_version": v.minVersion,
		"updated": v.updated, "links": []wire.Link{v.self(c)}}
}

// document is the version's own document.
func (v apiVersion) document(c echo.Context) map[string]any {
	out := v.listed(c)
	out["links"] = []map[string]string{
		{"rel": "self", "href": v.self(c).Href},
		{"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"},
	}
	out["media-types"] = []map[string]string{{"base": "application/json", "type": v.mediaType}}
	return map[string]any{"version": out}
}

// Version is GET /compute/v2.1: the version the API speaks.
func (h *Handlers) Version(c echo.Context) error {
	return c.JSON(http.StatusOK, apiVersions[1].document(c))
}

// LegacyVersion is GET /compute/v2: the document of Nova's legacy v2.0 API.
func (h *Handlers) LegacyVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, apiVersions[0].document(c))
}

// Versions is GET / and GET /compute: the compute API versions, public as
// in Nova.
func (h *Handlers) Versions(c echo.Context) error {
	out := make([]map[string]any, 0, len(apiVersions))
	for _, v := range apiVersions {
		out = append(out, v.listed(c))
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": out})
}
