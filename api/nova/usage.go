package nova

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// os-simple-tenant-usage, as Nova computes it (simple_tenant_usage.py),
// from the lifetimes of the servers in the replicated state: a server is
// used from its creation (Nova: launched_at; corral's servers hold their
// node from the start of the build) until it was deleted (its last update
// once DELETED) or the end of the period. A server that never got an owner
// (refused at scheduling) used nothing, as an instance Nova never launched.
// Deleted servers count until the leader purges them (deleted_retention):
// a period older than the retention misses the servers purged since.

// maxUsageLimit is Nova's [api] max_limit, the page of a usage list.
const maxUsageLimit = 1000

// serverUsage is one server's usage in a period.
type serverUsage struct {
	v        fsm.Server
	hours    float64
	started  time.Time
	ended    time.Time // zero: still there
	uptime   int64
	localGB  int64
	tenantID string
}

// The views of a usage.
const (
	usageServer view = 1 << iota // an entry of server_usages
)

var serverUsageTable = &table[serverUsage]{
	resource: "server_usage",
	views:    []string{"server"},
	fields: []field[serverUsage]{
		{name: "instance_id", in: usageServer, value: func(u serverUsage) any { return u.v.ID }},
		{name: "name", in: usageServer, value: func(u serverUsage) any { return u.v.Name }},
		{name: "tenant_id", in: usageServer, value: func(u serverUsage) any { return u.tenantID }},
		{name: "flavor", in: usageServer, value: func(u serverUsage) any { return u.v.Flavor.Name }},
		{name: "hours", in: usageServer, value: func(u serverUsage) any { return u.hours }},
		{name: "memory_mb", in: usageServer, value: func(u serverUsage) any { return u.v.Flavor.RAM }},
		{name: "local_gb", in: usageServer, value: func(u serverUsage) any { return u.localGB }},
		{name: "vcpus", in: usageServer, value: func(u serverUsage) any { return u.v.Flavor.VCPUs }},
		{name: "started_at", in: usageServer, value: func(u serverUsage) any { return u.started.UTC().Format(novaMicroTime) }},
		{name: "ended_at", in: usageServer, value: func(u serverUsage) any {
			if u.ended.IsZero() {
				return nil
			}
			return u.ended.UTC().Format(novaMicroTime)
		}},
		{name: "state", in: usageServer, value: func(u serverUsage) any {
			if !u.ended.IsZero() {
				return "terminated"
			}
			return vmStateOf(serverItem{v: u.v})
		}},
		{name: "uptime", in: usageServer, value: func(u serverUsage) any { return u.uptime }},
	},
}

// tenantUsage sums a project's server usages.
type tenantUsage struct {
	tenantID    string
	start, stop time.Time
	servers     []serverUsage
	// rendered are the server_usages shown (nil: none, the list without
	// detailed=1).
	rendered []map[string]any
}

const (
	usageTenantList view = 1 << iota // an entry of GET /os-simple-tenant-usage
	usageTenantShow                  // GET /os-simple-tenant-usage/{tenant}
)

func (t tenantUsage) sum(f func(serverUsage) float64) float64 {
	total := 0.0
	for _, u := range t.servers {
		total += f(u)
	}
	return total
}

var tenantUsageTable = &table[tenantUsage]{
	resource: "tenant_usage",
	views:    []string{"list", "show"},
	fields: []field[tenantUsage]{
		{name: "tenant_id", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any { return t.tenantID }},
		{name: "start", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any { return t.start.UTC().Format(novaMicroTime) }},
		{name: "stop", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any { return t.stop.UTC().Format(novaMicroTime) }},
		{name: "total_hours", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any {
			return t.sum(func(u serverUsage) float64 { return u.hours })
		}},
		{name: "total_local_gb_usage", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any {
			return t.sum(func(u serverUsage) float64 { return float64(u.localGB) * u.hours })
		}},
		{name: "total_memory_mb_usage", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any {
			return t.sum(func(u serverUsage) float64 { return float64(u.v.Flavor.RAM) * u.hours })
		}},
		{name: "total_vcpus_usage", in: usageTenantList | usageTenantShow, value: func(t tenantUsage) any {
			return t.sum(func(u serverUsage) float64 { return float64(u.v.Flavor.VCPUs) * u.hours })
		}},
		{name: "server_usages", in: usageTenantList | usageTenantShow, when: "a list with detailed=1; always in show", value: func(t tenantUsage) any {
			if t.rendered == nil {
				return omit
			}
			return t.rendered
		}},
	},
}

// usagePeriod reads ?start= and ?end= as Nova does: each in one of its
// three formats, now when absent; the end no later than now, and the
// start before the end.
func usagePeriod(c echo.Context, now time.Time) (start, stop time.Time, err error) {
	parse := func(name string) (time.Time, error) {
		v := c.QueryParam(name)
		if v == "" {
			return now, nil
		}
		for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999"} {
			if t, err := time.Parse(layout, v); err == nil {
				return t.UTC(), nil
			}
		}
		return time.Time{}, core.BadRequest("Invalid datetime string: Datetime is in invalid format")
	}
	if start, err = parse("start"); err != nil {
		return
	}
	if stop, err = parse("end"); err != nil {
		return
	}
	if c.QueryParam("start") == "" && c.QueryParam("end") == "" {
		start = now.Add(-time.Microsecond) // Nova reads the clock twice: an empty period
	}
	if !start.Before(stop) {
		return start, stop, core.BadRequest("Invalid start time. The start time cannot occur after the end time.")
	}
	return start, minTime(stop, now), nil
}

// usagesFor returns the usages of the servers used in the period (of one
// project, or every one for ""), oldest first, paged from 2.40 by
// instance id.
func (h *Handlers) usagesFor(c echo.Context, project string, start, stop, now time.Time) ([]serverUsage, bool, error) {
	p := page{limit: maxUsageLimit}
	if mvAtLeast(c, 2, 40) {
		var err error
		if p, err = parsePage(c.QueryParams(), limitZeroIsAll); err != nil {
			return nil, false, err
		}
		if p.limit < 0 || p.limit > maxUsageLimit {
			p.limit = maxUsageLimit
		}
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return nil, false, err
	}
	var all []serverUsage
	for _, v := range h.st.Store().ServersEndedAfter(start) {
		if v.Host == "" || project != "" && v.Project() != project {
			continue
		}
		u := serverUsage{v: v, started: v.CreatedAt, tenantID: v.Project(), localGB: int64(v.Flavor.Disk + v.Flavor.Ephemeral)}
		if !v.Live() {
			u.ended = v.UpdatedAt
		}
		if !u.ended.IsZero() && !u.ended.After(start) || !u.started.Before(stop) {
			continue
		}
		from, to := maxTime(u.started, start), stop
		if !u.ended.IsZero() {
			to = minTime(stop, u.ended)
			u.uptime = int64(u.ended.Sub(u.started).Seconds())
		} else {
			u.uptime = int64(now.Sub(u.started).Seconds())
		}
		u.hours = to.Sub(from).Seconds() / 3600
		all = append(all, u)
	}
	listed, _, err := pageOf(all, p, func(u serverUsage) string { return u.v.ID }, nil)
	return listed, mvAtLeast(c, 2, 40) && len(listed) == p.limit && p.limit > 0, err
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ListTenantUsages is GET /os-simple-tenant-usage (admins): a summary per
// project, with each server's usage when ?detailed=1.
func (h *Handlers) ListTenantUsages(c echo.Context) error {
	now := time.Now().UTC()
	start, stop, err := usagePeriod(c, now)
	if err != nil {
		return err
	}
	usages, more, err := h.usagesFor(c, "", start, stop, now)
	if err != nil {
		return err
	}
	detailed := c.QueryParam("detailed") == "1"
	byProject := map[string]*tenantUsage{}
	var order []string
	for _, u := range usages {
		t := byProject[u.tenantID]
		if t == nil {
			t = &tenantUsage{tenantID: u.tenantID, start: start, stop: stop}
			if detailed {
				t.rendered = []map[string]any{}
			}
			byProject[u.tenantID] = t
			order = append(order, u.tenantID)
		}
		t.servers = append(t.servers, u)
		if detailed {
			t.rendered = append(t.rendered, serverUsageTable.render(c, usageServer, u))
		}
	}
	out := make([]map[string]any, 0, len(order))
	for _, id := range order {
		out = append(out, tenantUsageTable.render(c, usageTenantList, *byProject[id]))
	}
	resp := map[string]any{"tenant_usages": out}
	if more {
		resp["tenant_usages_links"] = nextLinks(c, usages[len(usages)-1].v.ID)
	}
	return c.JSON(http.StatusOK, resp)
}

// GetTenantUsage is GET /os-simple-tenant-usage/{tenant}: one project's
// usage, for its own members and for admins; {} when it used nothing, as
// Nova answers.
func (h *Handlers) GetTenantUsage(c echo.Context) error {
	tenant := c.Param("tenant")
	if cl := core.CallerOf(c); !cl.SeesEveryProject() && core.CallerProject(c) != tenant {
		return fmt.Errorf("%w: Policy doesn't allow os_compute_api:os-simple-tenant-usage:show to be performed.", core.ErrForbidden)
	}
	now := time.Now().UTC()
	start, stop, err := usagePeriod(c, now)
	if err != nil {
		return err
	}
	usages, more, err := h.usagesFor(c, tenant, start, stop, now)
	if err != nil {
		return err
	}
	body := map[string]any{}
	if len(usages) > 0 {
		t := tenantUsage{tenantID: tenant, start: start, stop: stop, servers: usages, rendered: []map[string]any{}}
		for _, u := range usages {
			t.rendered = append(t.rendered, serverUsageTable.render(c, usageServer, u))
		}
		body = tenantUsageTable.render(c, usageTenantShow, t)
	}
	resp := map[string]any{"tenant_usage": body}
	if more {
		resp["tenant_usage_links"] = nextLinks(c, usages[len(usages)-1].v.ID)
	}
	return c.JSON(http.StatusOK, resp)
}
