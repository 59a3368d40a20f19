package nova

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The hypervisor routes Nova deprecated at 2.53 for
// ?hypervisor_hostname_pattern= and ?with_servers= (search and servers),
// and the statistics over every hypervisor (until 2.87, past corral's
// maximum). From 2.53 on, search and servers answer 404 as Nova does for a
// method its microversion no longer has.

// hypervisorsMatching returns the hypervisors whose hostname holds the
// pattern (Nova matches with SQL's LIKE %pattern%), or Nova's 404.
func (h *Handlers) hypervisorsMatching(c echo.Context) ([]hypervisor, error) {
	if mvAtLeast(c, 2, 53) {
		return nil, echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	pattern := c.Param("id")
	if err := h.st.ReadBarrier(c); err != nil {
		return nil, err
	}
	var out []hypervisor
	for _, hv := range h.hypervisors() {
		if strings.Contains(hv.hostname, pattern) {
			out = append(out, hv)
		}
	}
	if len(out) == 0 {
		return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No hypervisor matching '%s' could be found.", pattern))
	}
	return out, nil
}

// SearchHypervisors is GET /os-hypervisors/{pattern}/search (2.1 to
// 2.52): the brief view of every hypervisor whose hostname holds pattern.
func (h *Handlers) SearchHypervisors(c echo.Context) error {
	found, err := h.hypervisorsMatching(c)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(found))
	for _, hv := range found {
		out = append(out, hypervisorTable.render(c, hypervisorBrief, hypervisorItem{hv: hv}))
	}
	return c.JSON(http.StatusOK, map[string]any{"hypervisors": out})
}

// HypervisorServers is GET /os-hypervisors/{pattern}/servers (2.1 to
// 2.52): the matching hypervisors with the servers they hold ("servers"
// only on a hypervisor that holds some, as in Nova).
func (h *Handlers) HypervisorServers(c echo.Context) error {
	found, err := h.hypervisorsMatching(c)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(found))
	for _, hv := range found {
		out = append(out, hypervisorTable.render(c, hypervisorOn, hypervisorItem{hv: hv}))
	}
	return c.JSON(http.StatusOK, map[string]any{"hypervisors": out})
}

// hypervisorStats is the one view of GET /os-hypervisors/statistics.
const hypervisorStats view = 1

// statsItem sums every hypervisor's resources.
type statsItem struct {
	count, vcpus, vcpusUsed, memoryMB, memoryUsed, localGB, localUsed, running int64
}

// hypervisorStatsTable is Nova's hypervisor_statistics (Nova drops the
// route at 2.88, past corral's maximum).
var hypervisorStatsTable = &table[statsItem]{
	resource: "hypervisor_statistics",
	views:    []string{"statistics"},
	fields: []field[statsItem]{
		{name: "count", in: hypervisorStats, value: func(s statsItem) any { return s.count }},
		{name: "vcpus", in: hypervisorStats, value: func(s statsItem) any { return s.vcpus }},
		{name: "vcpus_used", in: hypervisorStats, value: func(s statsItem) any { return s.vcpusUsed }},
		{name: "memory_mb", in: hypervisorStats, value: func(s statsItem) any { return s.memoryMB }},
		{name: "memory_mb_used", in: hypervisorStats, value: func(s statsItem) any { return s.memoryUsed }},
		{name: "free_ram_mb", in: hypervisorStats, value: func(s statsItem) any { return s.memoryMB - s.memoryUsed }},
		{name: "local_gb", in: hypervisorStats, value: func(s statsItem) any { return s.localGB }},
		{name: "local_gb_used", in: hypervisorStats, value: func(s statsItem) any { return s.localUsed }},
		{name: "free_disk_gb", in: hypervisorStats, value: func(s statsItem) any { return s.localGB - s.localUsed }},
		{name: "disk_available_least", in: hypervisorStats, value: func(s statsItem) any { return s.localGB - s.localUsed }},
		{name: "current_workload", in: hypervisorStats, value: func(statsItem) any { return 0 }},
		{name: "running_vms", in: hypervisorStats, value: func(s statsItem) any { return s.running }},
	},
}

// HypervisorStatistics is GET /os-hypervisors/statistics: the sums over
// every hypervisor its detail view shows (Ironic nodes report no VCPU,
// RAM or disk, as with Nova's Ironic driver and Placement's custom
// resource classes).
func (h *Handlers) HypervisorStatistics(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	var s statsItem
	for _, hv := range h.hypervisors() {
		s.count++
		s.vcpus += hv.vcpus
		s.vcpusUsed += hv.used["VCPU"]
		s.memoryMB += hv.memoryMB
		s.memoryUsed += hv.used["MEMORY_MB"]
		s.localGB += hv.localGB
		s.localUsed += hv.used["DISK_GB"]
		s.running += int64(len(hv.servers))
	}
	return c.JSON(http.StatusOK, map[string]any{"hypervisor_statistics": hypervisorStatsTable.render(c, hypervisorStats, s)})
}
