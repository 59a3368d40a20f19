package nova

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// GET /servers and /servers/detail with Nova's filters and sorting: the
// regex filters (name, ip, ip6) search as Python's re.search does, the
// exact ones (flavor, image, reservation_id, status, host) compare,
// changes-since takes deleted servers too, tags filters from 2.26,
// sort_key and sort_dir with Nova's keys.

// maxFilterRegexLen bounds a regex filter (RE2 matches in linear time;
// the bound keeps compiling cheap).
const maxFilterRegexLen = 1024

// ListServers is GET /servers, or with detail /servers/detail.
func (h *Handlers) ListServers(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.st.ReadBarrier(c); err != nil {
			return err
		}
		q := c.QueryParams()
		p, err := parsePage(q, limitZeroIsEmpty)
		if err != nil {
			return err
		}
		cl := core.CallerOf(c)
		project, err := listProject(cl, q)
		if err != nil {
			return err
		}
		sel, err := serverFilter(c, q, project)
		if err != nil {
			return err
		}
		order, err := serverOrder(c, q, cl.SeesEveryProject())
		if err != nil {
			return err
		}
		listed, more, err := h.st.Store().ListServers(sel.query(order, p))
		if errors.Is(err, fsm.ErrNotFound) {
			return core.BadRequest("marker [%s] not found", p.marker)
		}
		if err != nil {
			return err
		}
		out := make([]any, 0, len(listed))
		for _, v := range listed {
			if detail {
				out = append(out, h.serverView(c, serverDetail, v))
			} else {
				out = append(out, briefServer(c, v))
			}
		}
		resp := map[string]any{"servers": out}
		if more && len(listed) > 0 {
			resp["servers_links"] = nextLinks(c, listed[len(listed)-1].ID)
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// regexParam compiles the regex filter name of q ("" when absent).
func regexParam(q url.Values, name string) (*regexp.Regexp, error) {
	if !q.Has(name) {
		return nil, nil
	}
	v := q.Get(name)
	re, err := regexp.Compile(v)
	if err != nil || len(v) > maxFilterRegexLen {
		return nil, core.BadRequest("Invalid input for query parameters %s. Value: %s. '%s' is not a 'regex'", name, v, v)
	}
	return re, nil
}

// tagList reads a comma-separated tags filter.
func tagList(q url.Values, name string) []string {
	if !q.Has(name) {
		return nil
	}
	return strings.Split(q.Get(name), ",")
}

// serverAddrs are the server's fixed addresses of one IP version.
func serverAddrs(v fsm.Server, net fsm.ServerNet, version int) []string {
	var out []string
	for _, addrs := range serverAddresses(v, net, false) {
		for _, a := range addrs {
			if m, ok := a.(map[string]any); ok && m["version"] == version {
				out = append(out, fmt.Sprint(m["addr"]))
			}
		}
	}
	return out
}

// serverSelect is what a server list's query selects.
type serverSelect struct {
	project string
	deleted bool      // deleted servers too
	since   time.Time // changes-since (zero: none)
	// keep holds every filter of the query, the project, deleted and
	// changes-since included; net reads a server's ports.
	keep func(v *fsm.Server, net func(id string) fsm.ServerNet) bool
}

// query is the store's query of sel in order, paged as p.
func (sel serverSelect) query(order serverOrdering, p page) fsm.ServerQuery {
	fq := fsm.ServerQuery{Project: sel.project, Deleted: sel.deleted, Since: sel.since, Keep: sel.keep,
		Marker: p.marker, Limit: p.limit, Desc: order.desc}
	if !order.index {
		fq.Order = order.cmp
	}
	return fq
}

// serverFilter is the filter of a server list's query.
func serverFilter(c echo.Context, q url.Values, project string) (serverSelect, error) {
	name, err := regexParam(q, "name")
	if err != nil {
		return serverSelect{}, err
	}
	ip, err := regexParam(q, "ip")
	if err != nil {
		return serverSelect{}, err
	}
	ip6, err := regexParam(q, "ip6")
	if err != nil {
		return serverSelect{}, err
	}
	var since time.Time
	if q.Has("changes-since") {
		v := q.Get("changes-since")
		t, err := parseISOTime(v)
		if err != nil {
			return serverSelect{}, core.BadRequest("Invalid input for query parameters changes-since. Value: %s. '%s' is not a 'date-time'", v, v)
		}
		since = t
	}
	// deleted is an admin's filter (Nova drops it from anyone else's
	// query): oslo's boolean words list the deleted servers only, as Nova's
	// database filter; any other value the live ones; left out, the live
	// ones, and the deleted too with changes-since.
	hasDeleted := q.Has("deleted") && core.CallerOf(c).SeesEveryProject()
	onlyDeleted := hasDeleted && boolFromString(q.Get("deleted"))
	deleted := onlyDeleted || !since.IsZero() && !hasDeleted
	statuses := q["status"]
	var tagsAll, tagsAny, notAll, notAny []string
	if mvAtLeast(c, 2, 26) {
		tagsAll, tagsAny, notAll, notAny = tagList(q, "tags"), tagList(q, "tags-any"), tagList(q, "not-tags"), tagList(q, "not-tags-any")
	}
	has := func(v *fsm.Server, t string) bool { _, ok := slices.BinarySearch(v.Tags, t); return ok }
	keep := func(v *fsm.Server, netOf func(id string) fsm.ServerNet) bool {
		switch {
		case !v.Live() && !deleted, onlyDeleted && v.Live():
			return false
		case project != "" && v.Project() != project:
			return false
		case len(statuses) > 0 && !slices.ContainsFunc(statuses, func(s string) bool { return strings.EqualFold(s, serverStatus(*v)) }):
			return false
		case q.Has("host") && q.Get("host") != v.Host:
			return false
		case q.Has("flavor") && q.Get("flavor") != v.Flavor.ID:
			return false
		case q.Has("image") && q.Get("image") != v.Image():
			return false
		case q.Has("reservation_id") && q.Get("reservation_id") != v.ReservationID:
			return false
		case name != nil && !name.MatchString(v.Name):
			return false
		case ip != nil && !slices.ContainsFunc(serverAddrs(*v, netOf(v.ID), 4), ip.MatchString):
			return false
		case ip6 != nil && !slices.ContainsFunc(serverAddrs(*v, netOf(v.ID), 6), ip6.MatchString):
			return false
		case !since.IsZero() && v.UpdatedAt.Before(since):
			return false
		case tagsAll != nil && !allOf(tagsAll, func(t string) bool { return has(v, t) }):
			return false
		case tagsAny != nil && !slices.ContainsFunc(tagsAny, func(t string) bool { return has(v, t) }):
			return false
		case notAll != nil && allOf(notAll, func(t string) bool { return has(v, t) }):
			return false
		case notAny != nil && slices.ContainsFunc(notAny, func(t string) bool { return has(v, t) }):
			return false
		}
		return true
	}
	return serverSelect{project: project, deleted: deleted, since: since, keep: keep}, nil
}

func allOf(ts []string, f func(string) bool) bool {
	for _, t := range ts {
		if !f(t) {
			return false
		}
	}
	return true
}

// parseISOTime reads an ISO 8601 time as Nova's changes-since takes it.
func parseISOTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO 8601 time: %q", v)
}

// sortIgnored are the sort keys Nova takes and ignores (its
// SERVER_LIST_IGNORE_SORT_KEY; locked is a key from 2.73).
var sortIgnored = []string{"architecture", "cell_name", "cleaned", "default_ephemeral_device",
	"default_swap_device", "deleted", "deleted_at", "disable_terminate", "ephemeral_gb", "ephemeral_key_uuid",
	"id", "key_data", "launched_on", "locked", "memory_mb", "os_type", "reservation_id", "root_gb",
	"shutdown_terminate", "user_data", "vcpus", "vm_mode"}

// serverCmp compares two servers by one sort key.
type serverCmp func(a, b *fsm.Server) int

// byText compares the text get returns.
func byText(get func(v *fsm.Server) string) serverCmp {
	return func(a, b *fsm.Server) int { return strings.Compare(get(a), get(b)) }
}

// sortKeys are Nova's sort keys and how each compares; the keys of
// fields every corral server holds alike compare nothing. Times compare
// in time, as in Nova's database.
var sortKeys = map[string]serverCmp{
	"access_ip_v4": byText(func(v *fsm.Server) string { return v.AccessIPv4 }),
	"access_ip_v6": byText(func(v *fsm.Server) string { return v.AccessIPv6 }),
	"created_at":   func(a, b *fsm.Server) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"updated_at":   func(a, b *fsm.Server) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
	"display_description": byText(func(v *fsm.Server) string {
		if v.Description == nil {
			return ""
		}
		return *v.Description
	}),
	"display_name":     byText(func(v *fsm.Server) string { return v.Name }),
	"host":             byText(func(v *fsm.Server) string { return v.Host }),
	"node":             byText(func(v *fsm.Server) string { return v.NodeUUID }),
	"hostname":         byText(func(v *fsm.Server) string { return v.Hostname() }),
	"image_ref":        byText(func(v *fsm.Server) string { return v.Image() }),
	"instance_type_id": byText(func(v *fsm.Server) string { return v.Flavor.ID }),
	"key_name":         byText(func(v *fsm.Server) string { return v.KeyName }),
	"launch_index":     func(a, b *fsm.Server) int { return cmp.Compare(a.LaunchIndex, b.LaunchIndex) },
	"project_id":       byText(func(v *fsm.Server) string { return v.Project() }),
	"user_id":          byText(func(v *fsm.Server) string { return v.User() }),
	"uuid":             byText(func(v *fsm.Server) string { return v.ID }),
	"task_state":       byText(func(v *fsm.Server) string { return v.TaskState }),
	"vm_state":         byText(func(v *fsm.Server) string { s, _ := vmStateOf(serverItem{v: *v}).(string); return s }),
	"power_state":      byText(func(v *fsm.Server) string { return fmt.Sprint(powerStateOf(serverItem{v: *v})) }),
	"auto_disk_config": nil, "availability_zone": nil, "config_drive": nil, "kernel_id": nil,
	"launched_at": nil, "locked_by": nil, "progress": nil, "ramdisk_id": nil, "root_device_name": nil,
	"terminated_at": nil,
}

// serverOrdering is the order of a server list.
type serverOrdering struct {
	cmp func(a, b *fsm.Server) int
	// index: the order is the store's index order (created_at,
	// launch_index, uuid, in one direction; descending when desc).
	index, desc bool
}

// serverOrder is the order of a server list's query: sort_key and
// sort_dir as Nova takes them (newest first by default), created_at and
// the id last so that pages are stable.
func serverOrder(c echo.Context, q url.Values, admin bool) (serverOrdering, error) {
	keys, dirs := q["sort_key"], q["sort_dir"]
	if len(keys) == 0 {
		keys = []string{"created_at"}
	}
	ignored := sortIgnored
	if mvAtLeast(c, 2, 73) {
		ignored = slices.DeleteFunc(slices.Clone(sortIgnored), func(k string) bool { return k == "locked" })
	}
	// The keys Nova ignores go, with their directions, before anything
	// else is read, as Nova's remove_invalid_sort_keys drops them.
	var kept, keptDirs []string
	for i, k := range keys {
		if slices.Contains(ignored, k) && !mvAtLeast(c, 2, 75) {
			continue
		}
		kept = append(kept, k)
		if i < len(dirs) {
			keptDirs = append(keptDirs, dirs[i])
		}
	}
	type order struct {
		key  string
		cmp  serverCmp
		desc bool
	}
	var orders []order
	for i, k := range kept {
		dir := "desc"
		if i < len(keptDirs) {
			dir = keptDirs[i]
		} else if len(keptDirs) > 0 {
			dir = keptDirs[0]
		}
		if dir != "asc" && dir != "desc" {
			return serverOrdering{}, core.BadRequest("Unknown sort direction, must be one of: asc, desc")
		}
		get, known := sortKeys[k]
		switch {
		case k == "locked" && mvAtLeast(c, 2, 73):
			get = byText(func(v *fsm.Server) string { return fmt.Sprint(v.Locked) })
		case !known:
			return serverOrdering{}, core.BadRequest("Invalid input for query parameters sort_key. Value: %s. '%s' is not one of the sort keys of servers", k, k)
		case (k == "host" || k == "node") && !admin:
			return serverOrdering{}, fmt.Errorf("%w: Only administrators can sort servers by %s", core.ErrForbidden, k)
		case get == nil:
			continue
		}
		orders = append(orders, order{key: k, cmp: get, desc: dir == "desc"})
	}
	// Nova's defaults come last: created_at and the id, in the first
	// direction given (desc when none is); the servers of one request
	// in their launch order, as Nova's ids grow.
	desc := len(keptDirs) == 0 || keptDirs[0] == "desc"
	if !slices.Contains(kept, "created_at") {
		orders = append(orders, order{key: "created_at", cmp: sortKeys["created_at"], desc: desc})
	}
	orders = append(orders, order{key: "launch_index", cmp: sortKeys["launch_index"], desc: desc},
		order{key: "uuid", cmp: sortKeys["uuid"], desc: desc})
	// A key after the same key compares nothing: without them, is the
	// order the index's?
	var used []string
	index := true
	for _, o := range orders {
		if !slices.Contains(used, o.key) {
			used = append(used, o.key)
			index = index && o.desc == orders[0].desc
		}
	}
	index = index && slices.Equal(used, []string{"created_at", "launch_index", "uuid"})
	cmpAll := func(a, b *fsm.Server) int {
		for _, o := range orders {
			if n := o.cmp(a, b); n != 0 {
				if o.desc {
					return -n
				}
				return n
			}
		}
		return 0
	}
	return serverOrdering{cmp: cmpAll, index: index, desc: orders[0].desc}, nil
}
