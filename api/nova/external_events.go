package nova

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// POST /os-server-external-events, as Nova's server_external_events
// controller: other services (Neutron above all: a port of the server
// changed, was plugged, unplugged or deleted) tell a server's compute
// host about it. Admins and Keystone's service role may call it (Nova's
// service_or_admin). Each event is answered on its own: 200 and
// "completed" when the server has an owner, 404 for a server unknown to
// the cluster, 422 for one without a host (a build no host could take),
// 400 for a volume-extended or power-update without its tag; the answer
// is 200 when every event was accepted, 207 otherwise (Nova answers 207,
// not 404, also when none was, since its bug 1855752). The accepted
// events of live servers are recorded in the server's history as events
// of its current action (fsm/external_events.go), once every peer knows
// the command; no owner acts on them.

// externalEventNames are the names each microversion takes (Nova's
// schemas: the network events from 2.0, volume-extended from 2.51,
// power-update from 2.76).
func externalEventNames(c echo.Context) []string {
	names := []string{fsm.ExternalNetworkChanged, fsm.ExternalVIFPlugged, fsm.ExternalVIFUnplugged, fsm.ExternalVIFDeleted}
	if mvAtLeast(c, 2, 51) {
		names = append(names, fsm.ExternalVolumeExtended)
	}
	if mvAtLeast(c, 2, 76) {
		names = append(names, fsm.ExternalPowerUpdate)
	}
	return names
}

// tagRequired are the events Nova drops (400) without a tag.
var tagRequired = map[string]bool{fsm.ExternalVolumeExtended: true, fsm.ExternalPowerUpdate: true}

var externalStatuses = []string{fsm.ExternalFailed, fsm.ExternalCompleted, fsm.ExternalInProgress}

// externalEvent is one event of the request, with the fields it came with.
type externalEvent struct {
	raw    map[string]json.RawMessage
	name   string
	server string
	status string
	tag    *string
}

// quotedList is a Python list of strings as jsonschema's messages show it.
func quotedList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + v + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// externalEventsInput reads the body as Nova's schema for the request's
// microversion does; nothing is looked up before it is all read.
func externalEventsInput(c echo.Context) ([]externalEvent, error) {
	var body map[string]json.RawMessage
	if err := core.BindStrict(c, &body); err != nil {
		return nil, err
	}
	if body == nil {
		return nil, core.BadRequest("Invalid input for field/attribute body. Value: null. None is not of type 'object'")
	}
	for k := range body {
		if k != "events" {
			return nil, core.BadRequest("Additional properties are not allowed ('%s' was unexpected)", shown(k))
		}
	}
	rawEvents, ok := body["events"]
	if !ok {
		return nil, core.BadRequest("'events' is a required property")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(rawEvents, &items); err != nil || items == nil {
		return nil, invalidInput("events", rawEvents, fmt.Sprintf("%s is not of type 'array'", shown(rawEvents)))
	}
	if len(items) == 0 {
		return nil, invalidInput("events", rawEvents, "[] is too short")
	}
	names := externalEventNames(c)
	out := make([]externalEvent, 0, len(items))
	for i, item := range items {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(item, &m); err != nil || m == nil {
			return nil, invalidInput(fmt.Sprint(i), item, fmt.Sprintf("%s is not of type 'object'", shown(item)))
		}
		for k := range m {
			switch k {
			case "name", "server_uuid", "status", "tag":
			default:
				return nil, invalidInput(fmt.Sprint(i), item, fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected)", shown(k)))
			}
		}
		for _, k := range []string{"name", "server_uuid"} {
			if _, ok := m[k]; !ok {
				return nil, invalidInput(fmt.Sprint(i), item, fmt.Sprintf("'%s' is a required property", k))
			}
		}
		str := func(k string) (string, error) {
			var s string
			if err := json.Unmarshal(m[k], &s); err != nil {
				return "", invalidInput(k, m[k], fmt.Sprintf("%s is not of type 'string'", shown(m[k])))
			}
			return s, nil
		}
		ev := externalEvent{raw: m, status: fsm.ExternalCompleted}
		var err error
		if ev.name, err = str("name"); err != nil {
			return nil, err
		}
		if !slices.Contains(names, ev.name) {
			return nil, invalidInput("name", ev.name, fmt.Sprintf("'%s' is not one of %s", shown(ev.name), quotedList(names)))
		}
		if ev.server, err = str("server_uuid"); err != nil {
			return nil, err
		}
		if _, err := uuid.Parse(ev.server); err != nil {
			return nil, invalidInput("server_uuid", ev.server, fmt.Sprintf("'%s' is not a 'uuid'", shown(ev.server)))
		}
		if _, ok := m["status"]; ok {
			if ev.status, err = str("status"); err != nil {
				return nil, err
			}
			if !slices.Contains(externalStatuses, ev.status) {
				return nil, invalidInput("status", ev.status, fmt.Sprintf("'%s' is not one of %s", shown(ev.status), quotedList(externalStatuses)))
			}
		}
		if _, ok := m["tag"]; ok {
			tag, err := str("tag")
			if err != nil {
				return nil, err
			}
			if len([]rune(tag)) > 255 {
				return nil, invalidInput("tag", tag, fmt.Sprintf("'%s' is too long", shown(tag)))
			}
			ev.tag = &tag
		}
		out = append(out, ev)
	}
	return out, nil
}

// CreateExternalEvents is POST /os-server-external-events.
func (h *Handlers) CreateExternalEvents(c echo.Context) error {
	events, err := externalEventsInput(c)
	if err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	store := h.st.Store()
	result := http.StatusOK
	answers := make([]map[string]any, 0, len(events))
	var accepted []fsm.ExternalEvent
	for _, ev := range events {
		answer := map[string]any{}
		for k, v := range ev.raw {
			answer[k] = v
		}
		code := http.StatusOK
		s, err := store.Server(ev.server)
		switch {
		case err != nil:
			code = http.StatusNotFound
			h.log.Debug("dropping an external event for an unknown server", "event", ev.name, "server", ev.server)
		case tagRequired[ev.name] && ev.tag == nil:
			code = http.StatusBadRequest
			h.log.Debug("dropping an external event without its tag", "event", ev.name, "server", ev.server)
		case s.Host == "":
			code = http.StatusUnprocessableEntity
			h.log.Debug("dropping an external event for a server without a host", "event", ev.name, "server", ev.server)
		default:
			tag := ""
			if ev.tag != nil {
				tag = *ev.tag
			}
			h.log.Info("accepted an external event", "event", ev.name, "tag", tag, "server", ev.server, "host", s.Host,
				"status", ev.status, "request_id", core.RequestID(c))
			if s.Live() {
				accepted = append(accepted, fsm.ExternalEvent{Server: ev.server, Name: ev.name, Status: ev.status, Tag: tag})
			}
		}
		answer["code"] = code
		if code == http.StatusOK {
			answer["status"] = fsm.ExternalCompleted
		} else {
			answer["status"] = fsm.ExternalFailed
			result = http.StatusMultiStatus
		}
		answers = append(answers, answer)
	}
	if err := h.recordExternalEvents(c, accepted); err != nil {
		return err
	}
	return c.JSON(result, map[string]any{"events": answers})
}

// recordExternalEvents commits the accepted events of live servers, at
// most fsm.MaxExternalEventsPerEntry an entry, once every peer knows the
// command and while servers' histories are kept (otherwise they are
// answered, not recorded).
func (h *Handlers) recordExternalEvents(c echo.Context, events []fsm.ExternalEvent) error {
	if len(events) == 0 || !h.st.Store().FeatureEnabled(fsm.FeatureInstanceActions) {
		return nil // no history is kept: nothing to record
	}
	if !h.known(fsm.CmdRecordExternalEvents) {
		h.log.Info("external events are not recorded until every peer of the cluster runs a version that knows them",
			"events", len(events))
		return nil
	}
	for len(events) > 0 {
		n := min(len(events), fsm.MaxExternalEventsPerEntry)
		if err := h.st.Propose(c, &fsm.RecordExternalEvents{Events: events[:n]}); err != nil {
			return err
		}
		events = events[n:]
	}
	return nil
}
