package nova

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// Limits is GET /limits. corral enforces no quotas, so every maximum is -1
// (unlimited); the totals are the project's live servers, their cores and
// their memory, from the flavors they were created with.
func (h *Handlers) Limits(c echo.Context) error {
	project := core.CallerProject(c)
	if t := c.QueryParam("tenant_id"); t != "" && t != project {
		if !core.CallerOf(c).SeesEveryProject() {
			return fmt.Errorf("%w: only admins may read another project's limits", core.ErrForbidden)
		}
		project = t
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	var instances, cores, ram int
	for _, v := range h.st.Store().Servers() {
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
