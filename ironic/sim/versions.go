package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

const (
	minMinor    = 1
	latestMinor = 82 // the newest microversion this simulator knows (Ironic 21.4)

	hdrMin     = "X-OpenStack-Ironic-API-Minimum-Version"
	hdrMax     = "X-OpenStack-Ironic-API-Maximum-Version"
	hdrVersion = "X-OpenStack-Ironic-API-Version"
)

// Microversions at which features appeared.
const (
	mvNodeName       = 5
	mvFields         = 8
	mvResourceClass  = 21
	mvTraits         = 37
	mvAllocations    = 52
	mvAllocPatch     = 57
	mvAllocBackfill  = 58
	mvAllocOwner     = 60
	mvPhysicalNet    = 34
	mvPortSmartNIC   = 53
	mvPortLocalLink  = 19
	mvPortInternal   = 18
	mvPortPortgroup  = 24
	mvVIFs           = 28
	mvNodeListDetail = 43
)

// nodeVersionedFields maps node fields to the microversion that introduced them.
var nodeVersionedFields = map[string]int{
	"driver_internal_info": 3, "name": 5, "inspection_finished_at": 6, "inspection_started_at": 6,
	"clean_step": 7, "raid_config": 12, "target_raid_config": 12, "network_interface": 20,
	"resource_class": 21, "storage_interface": 33, "traits": 37, "rescue_interface": 38,
	"bios_interface": 40, "fault": 42, "deploy_step": 44, "conductor_group": 46,
	"automated_clean": 47, "protected": 48, "protected_reason": 48, "conductor": 49, "owner": 50,
	"description": 51, "allocation_uuid": 52, "events": 54, "retired": 61, "retired_reason": 61,
	"lessee": 65, "network_data": 66, "boot_mode": 75, "secure_boot": 75, "shard": 82,
	"boot_interface": 31, "console_interface": 31, "deploy_interface": 31, "inspect_interface": 31,
	"management_interface": 31, "power_interface": 31, "raid_interface": 31, "vendor_interface": 31,
}

func parseMinor(v string) (int, bool) {
	major, minor, ok := strings.Cut(v, ".")
	if !ok || major != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(minor)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func (s *Server) versionString() string { return fmt.Sprintf("1.%d", s.maxMinor) }

// negotiate reads the version header; it writes the 406 itself and reports false when the
// requested version is not served.
func (c *call) negotiate() bool {
	h := strings.TrimSpace(c.r.Header.Get(hdrVersion))
	switch {
	case h == "":
		c.minor = minMinor
		return true
	case strings.EqualFold(h, "latest"):
		c.minor = c.s.maxMinor
		return true
	}
	rng := fmt.Sprintf("The supported version range is: [1.%d, %s].", minMinor, c.s.versionString())
	major, _, ok := strings.Cut(h, ".")
	if ok && major != "1" {
		if _, err := strconv.Atoi(major); err == nil {
			c.setVersionHeaders(false)
			c.abort(http.StatusNotAcceptable, fmt.Sprintf(
				"Mutually exclusive versions requested. Version %s requested but not supported by this service. %s", h, rng))
			return false
		}
	}
	minor, ok := parseMinor(h)
	if !ok {
		c.setVersionHeaders(false)
		c.abort(http.StatusNotAcceptable, "Invalid value for X-OpenStack-Ironic-API-Version header")
		return false
	}
	if minor < minMinor || minor > c.s.maxMinor {
		c.setVersionHeaders(false)
		c.abort(http.StatusNotAcceptable, fmt.Sprintf(
			"Version %s was requested but the minor version is not supported by this service. %s", h, rng))
		return false
	}
	c.minor = minor
	return true
}

// setVersionHeaders sets the minimum/maximum headers and, if negotiated, the version in use.
func (c *call) setVersionHeaders(negotiated bool) {
	h := c.w.Header()
	h.Set(hdrMin, fmt.Sprintf("1.%d", minMinor))
	h.Set(hdrMax, c.s.versionString())
	if negotiated {
		h.Set(hdrVersion, fmt.Sprintf("1.%d", c.minor))
	}
}

func (c *call) versionDoc() map[string]any {
	return map[string]any{
		"id":          "v1",
		"links":       []any{map[string]any{"href": c.base() + "/v1/", "rel": "self"}},
		"status":      "CURRENT",
		"min_version": fmt.Sprintf("1.%d", minMinor),
		"version":     c.s.versionString(),
	}
}

func (c *call) handleRoot() {
	c.json(http.StatusOK, map[string]any{
		"name":            "OpenStack Ironic API",
		"description":     "Ironic is an OpenStack project which enables the provision and management of baremetal machines.",
		"default_version": c.versionDoc(),
		"versions":        []any{c.versionDoc()},
	})
}

func (c *call) handleV1() {
	res := func(name string) []any { return c.links(name, "") }
	doc := map[string]any{
		"id": "v1",
		"links": []any{
			map[string]any{"href": c.base() + "/v1/", "rel": "self"},
			map[string]any{"href": "https://docs.openstack.org//ironic/latest/contributor//webapi.html",
				"rel": "describedby", "type": "text/html"},
		},
		"media_types": map[string]any{"base": "application/json", "type": "application/vnd.openstack.ironic.v1+json"},
		"chassis":     res("chassis"),
		"nodes":       res("nodes"),
		"ports":       res("ports"),
		"drivers":     res("drivers"),
		"version":     c.versionDoc(),
	}
	for _, r := range []struct {
		name  string
		minor int
	}{{"lookup", 22}, {"heartbeat", 22}, {"portgroups", 24}, {"volume", 32}, {"conductors", 49},
		{"allocations", mvAllocations}, {"events", 54}, {"deploy_templates", 55}, {"shards", 82}} {
		if c.minor >= r.minor {
			doc[r.name] = res(r.name)
		}
	}
	c.json(http.StatusOK, doc)
}
