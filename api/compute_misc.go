package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// The small documents the openstack CLI asks for besides servers and
// flavors: the compute version list, limits and availability zones.

// novaVersions is GET / and GET /compute: the compute API versions corral
// serves (v2.1 only), public as in Nova.
func (s *Server) novaVersions(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"versions": []map[string]any{{
		"id": "v2.1", "status": "CURRENT", "version": novaMaxVersion, "min_version": novaMinVersion,
		"updated": "2013-07-23T11:33:21Z",
		"links":   []link{{Rel: "self", Href: baseURL(c) + novaPrefix + "/"}},
	}}})
}

// hostID is Nova's hostId: the owner host hashed with the server's
// project, so that a project can tell whether two of its servers share a
// host without learning host names; empty without a host.
func hostID(v fsm.Server) string {
	if v.Host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(v.Project() + v.Host))
	return hex.EncodeToString(sum[:])
}

// limits is GET /limits. corral enforces no quotas, so every maximum is -1
// (unlimited); the totals are the project's live servers, their cores and
// their memory, from the flavors they were created with.
func (s *Server) limits(c echo.Context) error {
	project := callerProject(c)
	if t := c.QueryParam("tenant_id"); t != "" && t != project {
		if !callerOf(c).seesEveryProject() {
			return fmt.Errorf("%w: only admins may read another project's limits", ErrForbidden)
		}
		project = t
	}
	if err := s.readBarrier(c); err != nil {
		return err
	}
	var instances, cores, ram int
	for _, v := range s.c.Store().Servers() {
		if v.Live() && v.Project() == project {
			instances++
			cores += v.Flavor.VCPUs
			ram += v.Flavor.RAM
		}
	}
	abs := map[string]any{
		"maxServerMeta": -1, "maxTotalCores": -1, "maxTotalInstances": -1, "maxTotalKeypairs": -1,
		"maxTotalRAMSize": -1, "maxServerGroups": -1, "maxServerGroupMembers": -1,
		"totalCoresUsed": cores, "totalInstancesUsed": instances, "totalRAMUsed": ram, "totalServerGroupsUsed": 0,
	}
	if !mvAtLeast(c, 2, 36) {
		for _, k := range []string{"maxSecurityGroups", "maxSecurityGroupRules", "maxTotalFloatingIps"} {
			abs[k] = -1
		}
		abs["totalSecurityGroupsUsed"], abs["totalFloatingIpsUsed"] = 0, 0
	}
	if !mvAtLeast(c, 2, 39) {
		abs["maxImageMeta"] = -1
	}
	if !mvAtLeast(c, 2, 57) {
		abs["maxPersonality"], abs["maxPersonalitySize"] = -1, -1
	}
	return c.JSON(http.StatusOK, map[string]any{"limits": map[string]any{"absolute": abs, "rate": []any{}}})
}

// availabilityZones is GET /os-availability-zone: the one zone, nova.
func (s *Server) availabilityZones(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"availabilityZoneInfo": []map[string]any{{
		"zoneName": availabilityZone, "zoneState": map[string]bool{"available": true}, "hosts": nil,
	}}})
}

// availabilityZonesDetail is GET /os-availability-zone/detail: the zone
// with every host's nova-compute service.
func (s *Server) availabilityZonesDetail(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	hosts := map[string]any{}
	for _, h := range s.c.Store().Hosts() {
		hosts[h.Name] = map[string]any{computeBinary: map[string]any{
			"available": h.Status == fsm.HostUp, "active": !h.Drained,
			"updated_at": h.ChangedAt.UTC().Format(novaMicroTime),
		}}
	}
	return c.JSON(http.StatusOK, map[string]any{"availabilityZoneInfo": []map[string]any{{
		"zoneName": availabilityZone, "zoneState": map[string]bool{"available": true}, "hosts": hosts,
	}}})
}

// checkNetworksVersion holds a boot's networks to its microversion: from
// 2.37 networks is required ("auto", "none" or a list), as in Nova. Below
// 2.37 Nova takes only a list; corral also takes "auto" and "none" there,
// which its own clients and tests have long sent without a microversion.
func checkNetworksVersion(c echo.Context, raw json.RawMessage) error {
	if mvAtLeast(c, 2, 37) && (len(raw) == 0 || string(raw) == "null") {
		return badRequest(`Invalid input for field/attribute server: 'networks' is a required property from microversion 2.37: give "auto", "none" or a list of {"uuid": ...}`)
	}
	return nil
}
