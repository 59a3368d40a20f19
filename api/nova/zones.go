package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// AvailabilityZones is GET /os-availability-zone: the one zone, nova.
func (h *Handlers) AvailabilityZones(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"availabilityZoneInfo": []map[string]any{{
		"zoneName": availabilityZone, "zoneState": map[string]bool{"available": true}, "hosts": nil,
	}}})
}

// AvailabilityZonesDetail is GET /os-availability-zone/detail: the zone
// with every host's nova-compute service.
func (h *Handlers) AvailabilityZonesDetail(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	hosts := map[string]any{}
	for _, host := range h.st.Store().Hosts() {
		hosts[host.Name] = map[string]any{computeBinary: map[string]any{
			"available": host.Status == fsm.HostUp, "active": !host.Drained,
			"updated_at": host.ChangedAt.UTC().Format(novaMicroTime),
		}}
	}
	return c.JSON(http.StatusOK, map[string]any{"availabilityZoneInfo": []map[string]any{{
		"zoneName": availabilityZone, "zoneState": map[string]bool{"available": true}, "hosts": hosts,
	}}})
}
