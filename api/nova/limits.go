package nova

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// limitsAbsolute is the one view of the limits: their "absolute" part.
const limitsAbsolute view = 1

// usage is what a project uses, for its limits.
type usage struct{ instances, cores, ram int }

func unlimited(usage) any { return -1 }

// limitsTable is Nova's absolute limits (nova/api/openstack/compute/views/
// limits.py): 2.36 dropped the network ones, 2.39 the image metadata,
// 2.57 the personality files. corral enforces no quotas: every maximum is
// -1 (unlimited).
var limitsTable = &table[usage]{
	resource: "limits",
	views:    []string{"absolute"},
	fields: []field[usage]{
		{name: "maxServerMeta", in: limitsAbsolute, value: unlimited},
		{name: "maxTotalCores", in: limitsAbsolute, value: unlimited},
		{name: "maxTotalInstances", in: limitsAbsolute, value: unlimited},
		{name: "maxTotalKeypairs", in: limitsAbsolute, value: unlimited},
		{name: "maxTotalRAMSize", in: limitsAbsolute, value: unlimited},
		{name: "maxServerGroups", in: limitsAbsolute, value: unlimited},
		{name: "maxServerGroupMembers", in: limitsAbsolute, value: unlimited},
		{name: "totalCoresUsed", in: limitsAbsolute, value: func(u usage) any { return u.cores }},
		{name: "totalInstancesUsed", in: limitsAbsolute, value: func(u usage) any { return u.instances }},
		{name: "totalRAMUsed", in: limitsAbsolute, value: func(u usage) any { return u.ram }},
		{name: "totalServerGroupsUsed", in: limitsAbsolute, value: func(usage) any { return 0 }},
		{name: "maxSecurityGroups", until: v2(35), in: limitsAbsolute, value: unlimited},
		{name: "maxSecurityGroupRules", until: v2(35), in: limitsAbsolute, value: unlimited},
		{name: "maxTotalFloatingIps", until: v2(35), in: limitsAbsolute, value: unlimited},
		{name: "totalSecurityGroupsUsed", until: v2(35), in: limitsAbsolute, value: func(usage) any { return 0 }},
		{name: "totalFloatingIpsUsed", until: v2(35), in: limitsAbsolute, value: func(usage) any { return 0 }},
		{name: "maxImageMeta", until: v2(38), in: limitsAbsolute, value: unlimited},
		{name: "maxPersonality", until: v2(56), in: limitsAbsolute, value: unlimited},
		{name: "maxPersonalitySize", until: v2(56), in: limitsAbsolute, value: unlimited},
	},
}

// Limits is GET /limits: the totals are the project's live servers, their
// cores and their memory, from the flavors they were created with.
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
	var u usage
	for _, v := range h.st.Store().Servers() {
		if v.Live() && v.Project() == project {
			u.instances++
			u.cores += v.Flavor.VCPUs
			u.ram += v.Flavor.RAM
		}
	}
	abs := limitsTable.render(c, limitsAbsolute, u)
	return c.JSON(http.StatusOK, map[string]any{"limits": map[string]any{"absolute": abs, "rate": []any{}}})
}
