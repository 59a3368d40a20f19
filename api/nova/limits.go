package nova

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// limitsAbsolute is the one view of the limits: their "absolute" part.
const limitsAbsolute view = 1

// usage is a project's limits (fsm.Store.ProjectQuotas) and what it uses
// of them (fsm.Store.QuotaUsage), for its absolute limits.
type usage struct{ limits, used fsm.QuotaLimits }

func limitOf(r string) func(usage) any { return func(u usage) any { return u.limits[r] } }
func usedOf(r string) func(usage) any  { return func(u usage) any { return u.used[r] } }

// limitsTable is Nova's absolute limits (nova/api/openstack/compute/views/
// limits.py), the project's quotas: 2.36 dropped the network ones, 2.39
// the image metadata, 2.57 the personality files.
var limitsTable = &table[usage]{
	resource: "limits",
	views:    []string{"absolute"},
	fields: []field[usage]{
		{name: "maxServerMeta", in: limitsAbsolute, value: limitOf(fsm.QuotaMetadataItems)},
		{name: "maxTotalCores", in: limitsAbsolute, value: limitOf(fsm.QuotaCores)},
		{name: "maxTotalInstances", in: limitsAbsolute, value: limitOf(fsm.QuotaInstances)},
		{name: "maxTotalKeypairs", in: limitsAbsolute, value: limitOf(fsm.QuotaKeyPairs)},
		{name: "maxTotalRAMSize", in: limitsAbsolute, value: limitOf(fsm.QuotaRAM)},
		{name: "maxServerGroups", in: limitsAbsolute, value: limitOf(fsm.QuotaServerGroups)},
		{name: "maxServerGroupMembers", in: limitsAbsolute, value: limitOf(fsm.QuotaServerGroupMembers)},
		{name: "totalCoresUsed", in: limitsAbsolute, value: usedOf(fsm.QuotaCores)},
		{name: "totalInstancesUsed", in: limitsAbsolute, value: usedOf(fsm.QuotaInstances)},
		{name: "totalRAMUsed", in: limitsAbsolute, value: usedOf(fsm.QuotaRAM)},
		{name: "totalServerGroupsUsed", in: limitsAbsolute, value: usedOf(fsm.QuotaServerGroups)},
		{name: "maxSecurityGroups", until: v2(35), in: limitsAbsolute, value: limitOf(fsm.QuotaSecurityGroups)},
		{name: "maxSecurityGroupRules", until: v2(35), in: limitsAbsolute, value: limitOf(fsm.QuotaSecurityGroupRules)},
		{name: "maxTotalFloatingIps", until: v2(35), in: limitsAbsolute, value: limitOf(fsm.QuotaFloatingIPs)},
		{name: "totalSecurityGroupsUsed", until: v2(35), in: limitsAbsolute, value: usedOf(fsm.QuotaSecurityGroups)},
		{name: "totalFloatingIpsUsed", until: v2(35), in: limitsAbsolute, value: usedOf(fsm.QuotaFloatingIPs)},
		{name: "maxImageMeta", until: v2(38), in: limitsAbsolute, value: limitOf(fsm.QuotaMetadataItems)},
		{name: "maxPersonality", until: v2(56), in: limitsAbsolute, value: limitOf(fsm.QuotaInjectedFiles)},
		{name: "maxPersonalitySize", until: v2(56), in: limitsAbsolute, value: limitOf(fsm.QuotaInjectedFileContentBytes)},
	},
}

// Limits is GET /limits: the project's quotas and what it uses of them
// (its live servers, their cores and memory, from the flavors they were
// created with). An admin may ask for another project's with tenant_id.
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
	st := h.st.Store()
	u := usage{limits: st.ProjectQuotas(project, ""), used: st.QuotaUsage(project, "")}
	abs := limitsTable.render(c, limitsAbsolute, u)
	return c.JSON(http.StatusOK, map[string]any{"limits": map[string]any{"absolute": abs, "rate": []any{}}})
}
