package nova

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Compute services, as Nova's os-services shows them: one nova-compute per
// corral host. Its state is the host's status in the log (up, or down when
// the leader marked it down or it left); its status is disabled while the
// host is drained. Disabling drains the host (no new servers, the leader
// moves its servers away), enabling undrains it, and forcing it down marks
// it down at once so that the leader reassigns its servers, as the native
// /v1/hosts/{name}/drain, undrain and force-down do.
//
// corral keeps no sticky forced_down flag: a host forced down that is in
// fact alive is marked up again by the leader once gossip has seen it alive
// for the up grace, so forced_down always reads false and forced_down=false
// changes nothing.

const computeBinary = "nova-compute"

// serviceNamespace derives the 2.53+ UUIDs of compute services from host
// names, so that every peer shows the same id for the same host.
var serviceNamespace = uuid.MustParse("6b0a3c51-6f0c-4d8e-9a41-3f6c2a0b7d15")

// serviceUUID is the 2.53+ id of a host's nova-compute service.
func serviceUUID(host string) string {
	return uuid.NewSHA1(serviceNamespace, []byte("nova-compute/"+host)).String()
}

// legacyID is the integer id shown below microversion 2.53 for the thing
// named key: stable across peers and restarts (the first 48 bits of its
// SHA-256, so it stays exact in JSON's doubles).
func legacyID(key string) int64 {
	sum := sha256.Sum256([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 16)
}

// serviceList is the one view of a service: an entry of GET /os-services
// and, from 2.53, the answer to PUT /os-services/{id}.
const serviceList view = 1

// serviceTable is Nova's view of a compute service (its services
// controller).
var serviceTable = &table[fsm.Host]{
	resource: "service",
	views:    []string{"list"},
	fields: []field[fsm.Host]{
		{name: "id", until: v2(52), in: serviceList, value: func(h fsm.Host) any { return legacyID("service/" + h.Name) }},
		{name: "id", since: v2(53), in: serviceList, value: func(h fsm.Host) any { return serviceUUID(h.Name) }},
		{name: "binary", in: serviceList, value: func(fsm.Host) any { return computeBinary }},
		{name: "host", in: serviceList, value: func(h fsm.Host) any { return h.Name }},
		{name: "zone", in: serviceList, value: func(fsm.Host) any { return availabilityZone }},
		{name: "status", in: serviceList, value: func(h fsm.Host) any {
			if h.Drained {
				return "disabled"
			}
			return "enabled"
		}},
		{name: "state", in: serviceList, value: func(h fsm.Host) any {
			if h.Status != fsm.HostUp {
				return "down"
			}
			return "up"
		}},
		{name: "disabled_reason", in: serviceList, value: func(h fsm.Host) any {
			if h.Drained && h.DrainReason != "" {
				return h.DrainReason
			}
			return nil
		}},
		{name: "updated_at", in: serviceList, value: func(h fsm.Host) any { return h.ChangedAt.UTC().Format(novaMicroTime) }},
		{name: "forced_down", since: v2(11), in: serviceList, value: func(fsm.Host) any { return false }},
	},
}

// computeService is Nova's view of one host's nova-compute service.
func computeService(c echo.Context, h fsm.Host) map[string]any {
	return serviceTable.render(c, serviceList, h)
}

// novaMicroTime is the timestamp format of Nova's os-services and
// os-hypervisors (microseconds, no zone).
const novaMicroTime = "2006-01-02T15:04:05.000000"

// availabilityZone is the one zone corral shows.
const availabilityZone = "nova"

// ListServices is GET /os-services.
func (h *Handlers) ListServices(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	host, bin := c.QueryParam("host"), c.QueryParam("binary")
	out := []map[string]any{}
	if bin == "" || bin == computeBinary {
		for _, hst := range h.st.Store().Hosts() {
			if host == "" || host == hst.Name {
				out = append(out, computeService(c, hst))
			}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"services": out})
}

// hostByServiceID finds the host whose nova-compute service has id.
func (h *Handlers) hostByServiceID(id string) (fsm.Host, error) {
	for _, host := range h.st.Store().Hosts() {
		if serviceUUID(host.Name) == id {
			return host, nil
		}
	}
	return fsm.Host{}, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Service %s could not be found.", id))
}

const maxDisabledReason = 255

// checkDisabledReason holds a service's disabled_reason to Nova's bound
// (255 characters) and to text without control characters.
func checkDisabledReason(reason string) error {
	if n := utf8.RuneCountInString(reason); n > maxDisabledReason {
		return core.BadRequest("disabled_reason is %d characters long: use at most %d", n, maxDisabledReason)
	}
	if err := fsm.CheckText("disabled_reason", reason, maxDisabledReason, true); err != nil {
		return invalidInput("disabled_reason", reason, "a reason is text without control characters")
	}
	return nil
}

// UpdateService is PUT /os-services/{id}: from 2.53 the service's
// UUID; before, one of Nova's actions enable, disable,
// disable-log-reason and force-down with {"host", "binary"} in the body.
func (h *Handlers) UpdateService(c echo.Context) error {
	id := c.Param("id")
	if !mvAtLeast(c, 2, 53) {
		return h.legacyServiceAction(c, id)
	}
	if uuid.Validate(id) != nil {
		return core.BadRequest("Invalid uuid %s", id)
	}
	var body wire.ServiceUpdate
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if body.Status == nil && body.ForcedDown == nil {
		return core.BadRequest("No updates were requested. Fields 'status' or 'forced_down' should be specified.")
	}
	if body.Status != nil && *body.Status != "enabled" && *body.Status != "disabled" {
		return core.BadRequest("Invalid input for field/attribute status. Value: %s. %q is not one of ['enabled', 'disabled']", *body.Status, *body.Status)
	}
	if body.DisabledReason != nil && (body.Status == nil || *body.Status != "disabled") {
		return core.BadRequest("Specifying 'disabled_reason' with status 'enabled' is invalid.")
	}
	reason := ""
	if body.DisabledReason != nil {
		reason = *body.DisabledReason
		if err := checkDisabledReason(reason); err != nil {
			return err
		}
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	host, err := h.hostByServiceID(id)
	if err != nil {
		return err
	}
	if body.Status != nil {
		if err := h.st.ProposeAndRead(c, &fsm.SetHostDrain{Name: host.Name, Drained: *body.Status == "disabled", Reason: reason}); err != nil {
			return err
		}
	}
	if body.ForcedDown != nil && *body.ForcedDown {
		if err := h.st.ProposeAndRead(c, &fsm.SetHostStatus{Name: host.Name, Status: fsm.HostDown}); err != nil {
			return err
		}
	}
	if host, err = h.st.Store().Host(host.Name); err != nil {
		return err
	}
	out := computeService(c, host)
	if body.ForcedDown != nil {
		out["forced_down"] = *body.ForcedDown
	}
	return c.JSON(http.StatusOK, map[string]any{"service": out})
}

// legacyServiceAction is PUT /os-services/{action} below microversion 2.53.
func (h *Handlers) legacyServiceAction(c echo.Context, action string) error {
	switch action {
	case "enable", "disable", "disable-log-reason", "force-down":
	default:
		return echo.NewHTTPError(http.StatusNotFound, "Unknown action")
	}
	if action == "force-down" && !mvAtLeast(c, 2, 11) {
		return echo.NewHTTPError(http.StatusNotFound, "Unknown action")
	}
	var body wire.LegacyServiceUpdate
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if body.Host == "" || body.Binary == "" {
		return core.BadRequest("the body must name the service: {\"host\": HOST, \"binary\": \"nova-compute\"}")
	}
	if body.Binary != computeBinary {
		return core.BadRequest("Updating a %s service is not supported. Only nova-compute services can be updated.", body.Binary)
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	if _, err := h.st.Store().Host(body.Host); err != nil {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Host '%s' is not mapped to any cell", body.Host))
	}
	out := map[string]any{"host": body.Host, "binary": computeBinary}
	var cmd fsm.Command
	switch action {
	case "enable":
		cmd = &fsm.SetHostDrain{Name: body.Host, Drained: false}
		out["status"] = "enabled"
	case "disable":
		cmd = &fsm.SetHostDrain{Name: body.Host, Drained: true}
		out["status"] = "disabled"
	case "disable-log-reason":
		if body.DisabledReason == nil || *body.DisabledReason == "" {
			return core.BadRequest("disabled_reason is required, 1 to %d characters", maxDisabledReason)
		}
		if err := checkDisabledReason(*body.DisabledReason); err != nil {
			return err
		}
		cmd = &fsm.SetHostDrain{Name: body.Host, Drained: true, Reason: *body.DisabledReason}
		out["status"], out["disabled_reason"] = "disabled", *body.DisabledReason
	case "force-down":
		if body.ForcedDown == nil {
			return core.BadRequest("forced_down is required: true or false")
		}
		out["forced_down"] = *body.ForcedDown
		if !*body.ForcedDown {
			return c.JSON(http.StatusOK, map[string]any{"service": out})
		}
		cmd = &fsm.SetHostStatus{Name: body.Host, Status: fsm.HostDown}
	}
	if err := h.st.Propose(c, cmd); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"service": out})
}

// parseLegacyID parses an integer id of the pre-2.53 API.
func parseLegacyID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
