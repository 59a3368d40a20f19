package nova

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Instance actions, as Nova's os-instance-actions: every action a user or
// a failover took on a server, newest first, each with the owner's event
// (fsm/history.go keeps them in the replicated state).

// The views of an instance action and of its events
// (nova/api/openstack/compute/instance_actions.py).
const (
	actionList view = 1 << iota // an entry of GET .../os-instance-actions
	actionShow                  // GET .../os-instance-actions/{request_id}
)

const eventShow view = 1

type actionItem struct {
	serverID string
	a        fsm.InstanceAction
	// events: the caller sees them (admins at every microversion, the
	// server's project from 2.51, as Nova's default policy has it).
	events bool
	items  []any
}

type eventItem struct {
	e       fsm.ActionEvent
	project string
	admin   bool // the caller sees tracebacks and hosts
}

const eventsShown = "to admins, and from 2.51 to the server's project (Nova's default policy)"

var instanceActionTable = &table[actionItem]{
	resource: "instance_action",
	views:    []string{"list", "show"},
	fields: []field[actionItem]{
		{name: "action", in: actionList | actionShow, value: func(i actionItem) any { return i.a.Action }},
		{name: "instance_uuid", in: actionList | actionShow, value: func(i actionItem) any { return i.serverID }},
		{name: "request_id", in: actionList | actionShow, value: func(i actionItem) any { return i.a.RequestID }},
		{name: "user_id", in: actionList | actionShow, value: func(i actionItem) any { return i.a.UserID }},
		{name: "project_id", in: actionList | actionShow, value: func(i actionItem) any { return i.a.ProjectID }},
		{name: "start_time", in: actionList | actionShow, value: func(i actionItem) any { return i.a.StartTime.UTC().Format(novaMicroTime) }},
		{name: "message", in: actionList | actionShow, value: func(i actionItem) any { return nullable(i.a.Message) }},
		{name: "updated_at", since: v2(58), in: actionList | actionShow, value: func(i actionItem) any { return i.a.UpdatedAt.UTC().Format(novaMicroTime) }},
		{name: "events", in: actionShow, when: eventsShown, value: func(i actionItem) any {
			if !i.events {
				return omit
			}
			return i.items
		}},
	},
}

var actionEventTable = &table[eventItem]{
	resource: "instance_action_event",
	views:    []string{"show"},
	fields: []field[eventItem]{
		{name: "event", in: eventShow, value: func(i eventItem) any { return i.e.Event }},
		{name: "start_time", in: eventShow, value: func(i eventItem) any { return i.e.StartTime.UTC().Format(novaMicroTime) }},
		{name: "finish_time", in: eventShow, value: func(i eventItem) any {
			if i.e.FinishTime.IsZero() {
				return nil
			}
			return i.e.FinishTime.UTC().Format(novaMicroTime)
		}},
		{name: "result", in: eventShow, value: func(i eventItem) any { return nullable(i.e.Result) }},
		{name: "traceback", in: eventShow, when: adminOnly, value: func(i eventItem) any {
			if !i.admin {
				return omit
			}
			return nullable(i.e.Traceback)
		}},
		{name: "host", since: v2(62), in: eventShow, when: adminOnly, value: func(i eventItem) any {
			if !i.admin {
				return omit
			}
			return i.e.Host
		}},
		{name: "hostId", since: v2(62), in: eventShow, value: func(i eventItem) any { return eventHostID(i.e.Host, i.project) }},
	},
}

// eventHostID is Nova's obfuscated host of an event (utils.generate_hostid).
func eventHostID(host, project string) string {
	if host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(project + host))
	return hex.EncodeToString(sum[:])
}

// actionServer is the server whose actions a request reads: from 2.21 a
// deleted one too (until it is purged), as Nova reads deleted instances
// there; another project's is a 404.
func (h *Handlers) actionServer(c echo.Context) (fsm.Server, error) {
	id := c.Param("id")
	v, err := h.st.Store().Server(id)
	if err != nil || !v.Live() && !mvAtLeast(c, 2, 21) || !core.CallerOf(c).Owns(v) {
		return fsm.Server{}, core.ServerNotFound(id)
	}
	return v, nil
}

// ListInstanceActions is GET /servers/{id}/os-instance-actions, newest
// first; from 2.58 paged by limit and marker (a request id) and narrowed
// by changes-since, from 2.66 by changes-before too (on updated_at).
func (h *Handlers) ListInstanceActions(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.actionServer(c)
	if err != nil {
		return err
	}
	acts := h.st.Store().InstanceActions(v.ID)
	slices.Reverse(acts)
	p := page{limit: -1}
	var since, before time.Time
	if mvAtLeast(c, 2, 58) {
		q := c.QueryParams()
		if p, err = parsePage(q, limitZeroIsEmpty); err != nil {
			return err
		}
		if since, err = actionTimeParam(q, "changes-since"); err != nil {
			return err
		}
		if mvAtLeast(c, 2, 66) {
			if before, err = actionTimeParam(q, "changes-before"); err != nil {
				return err
			}
		}
		if !since.IsZero() && !before.IsZero() && before.Before(since) {
			return core.BadRequest("The value of changes-since must be less than or equal to changes-before.")
		}
	}
	if p.marker != "" && !slices.ContainsFunc(acts, func(a fsm.InstanceAction) bool { return a.RequestID == p.marker }) {
		return core.BadRequest("Marker %s could not be found.", p.marker)
	}
	keep := func(a fsm.InstanceAction) bool {
		return (since.IsZero() || !a.UpdatedAt.Before(since)) && (before.IsZero() || !a.UpdatedAt.After(before))
	}
	shown, more, err := pageOf(acts, p, func(a fsm.InstanceAction) string { return a.RequestID }, keep)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(shown))
	for _, a := range shown {
		out = append(out, instanceActionTable.render(c, actionList, actionItem{serverID: v.ID, a: a}))
	}
	body := map[string]any{"instanceActions": out}
	if more && len(shown) > 0 {
		body["links"] = []wire.Link{{Rel: "next", Href: core.BaseURL(c) + c.Request().URL.Path + "?" +
			url.Values{"limit": {c.QueryParam("limit")}, "marker": {shown[len(shown)-1].RequestID}}.Encode()}}
	}
	return c.JSON(http.StatusOK, body)
}

// actionTimeParam reads an ISO 8601 time of the query ("" for none).
func actionTimeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05Z0700",
		"2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, core.BadRequest("Invalid input for query parameters %s. Value: %s. '%s' is not a 'date-time'", name, s, s)
}

// GetInstanceAction is GET /servers/{id}/os-instance-actions/{request_id}.
func (h *Handlers) GetInstanceAction(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.actionServer(c)
	if err != nil {
		return err
	}
	rid := c.Param("request_id")
	acts := h.st.Store().InstanceActions(v.ID)
	i := len(acts) - 1 // the latest of the request's actions
	for i >= 0 && acts[i].RequestID != rid {
		i--
	}
	if i < 0 {
		return echo.NewHTTPError(http.StatusNotFound, "Action "+rid+" not found")
	}
	return c.JSON(http.StatusOK, map[string]any{"instanceAction": actionView(c, v, acts[i])})
}

func actionView(c echo.Context, v fsm.Server, a fsm.InstanceAction) map[string]any {
	admin := core.CallerOf(c).SeesEveryProject()
	it := actionItem{serverID: v.ID, a: a, events: admin || mvAtLeast(c, 2, 51), items: []any{}}
	project := a.ProjectID
	if project == "" {
		project = v.Project()
	}
	// Newest first, as Nova lists them (created_at, then id, descending).
	for _, e := range slices.Backward(a.Events) {
		it.items = append(it.items, actionEventTable.render(c, eventShow, eventItem{e: e, project: project, admin: admin}))
	}
	return instanceActionTable.render(c, actionShow, it)
}
