package nova

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// Nova's os-quota-sets and os-quota-class-sets (nova/api/openstack/
// compute/quota_sets.py and quota_classes.py) over the replicated quotas
// (fsm/quota.go): a project's limits, a user's within it (?user_id=), the
// defaults, the usage of each (detail), and the "default" quota class.
// Reads are a project's reader's or an admin's, the defaults anyone's;
// writes are an admin's, as Nova's default policy has them.

// The views of a quota set.
const (
	quotaShow   view = 1 << iota // show and defaults: with the id
	quotaUpdate                  // the answer to an update: without
	quotaDetail                  // detail: in_use, limit and reserved
)

// quotaItem is what a quota view shows.
type quotaItem struct {
	id     string
	limits fsm.QuotaLimits
	inUse  fsm.QuotaLimits // detail only (nil otherwise)
}

// quotaValue is a resource's value in a view: its limit, or in the detail
// view its limit, use and (always 0) reservation.
func quotaValue(r string) func(quotaItem) any {
	return func(q quotaItem) any {
		if q.inUse != nil {
			return map[string]any{"in_use": q.inUse[r], "limit": q.limits[r], "reserved": 0}
		}
		return q.limits[r]
	}
}

// quotaRow is a resource's row, in every view given.
func quotaRow(r string, in view, since, until core.Microversion) field[quotaItem] {
	return field[quotaItem]{name: r, since: since, until: until, in: in, value: quotaValue(r)}
}

// quotaRows are the rows of the resources: 2.36 drops nova-network's from
// os-quota-sets (2.50 from os-quota-class-sets, which adds the server
// groups then) and 2.57 the injected files.
func quotaRows(in view, networkUntil, groupsSince core.Microversion) []field[quotaItem] {
	var out []field[quotaItem]
	for _, r := range fsm.QuotaResources {
		switch r {
		case fsm.QuotaFixedIPs, fsm.QuotaFloatingIPs, fsm.QuotaSecurityGroups, fsm.QuotaSecurityGroupRules:
			out = append(out, quotaRow(r, in, core.Microversion{}, networkUntil))
		case fsm.QuotaInjectedFiles, fsm.QuotaInjectedFileContentBytes, fsm.QuotaInjectedFilePathBytes:
			out = append(out, quotaRow(r, in, core.Microversion{}, v2(56)))
		case fsm.QuotaServerGroups, fsm.QuotaServerGroupMembers:
			out = append(out, quotaRow(r, in, groupsSince, core.Microversion{}))
		default:
			out = append(out, quotaRow(r, in, core.Microversion{}, core.Microversion{}))
		}
	}
	return out
}

func quotaID(in view) field[quotaItem] {
	return field[quotaItem]{name: "id", in: in, value: func(q quotaItem) any { return q.id }}
}

var quotaSetTable = &table[quotaItem]{
	resource: "quota_set",
	views:    []string{"show", "update", "detail"},
	fields: append([]field[quotaItem]{quotaID(quotaShow | quotaDetail)},
		quotaRows(quotaShow|quotaUpdate|quotaDetail, v2(35), core.Microversion{})...),
}

// The views of a quota class set.
const (
	quotaClassShow   view = 1 << iota // show: with the id
	quotaClassUpdate                  // the answer to an update: without
)

var quotaClassTable = &table[quotaItem]{
	resource: "quota_class_set",
	views:    []string{"show", "update"},
	fields: append([]field[quotaItem]{quotaID(quotaClassShow)},
		quotaRows(quotaClassShow|quotaClassUpdate, v2(49), v2(50))...),
}

// quotaSetProject is the project of an os-quota-sets route, which the
// caller must be a reader of (or an admin); at 2.75 and later no query
// parameter but user_id is taken.
func quotaSetProject(c echo.Context, action string) (project, user string, err error) {
	project = c.Param("id")
	if mvAtLeast(c, 2, 75) {
		if err := onlyQuery(c, "user_id"); err != nil {
			return "", "", err
		}
	}
	if cl := core.CallerOf(c); !cl.SeesEveryProject() && cl.Project != project {
		return "", "", fmt.Errorf("%w: Policy doesn't allow os_compute_api:os-quota-sets:%s to be performed.", core.ErrForbidden, action)
	}
	if err := checkQuotaName("project id", project); err != nil {
		return "", "", err
	}
	return project, c.QueryParam("user_id"), nil
}

// onlyQuery refuses query parameters other than allowed, as Nova's query
// schemas do from 2.75.
func onlyQuery(c echo.Context, allowed ...string) error {
	var extra []string
	for k := range c.QueryParams() {
		if k != "consistency" && !contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return core.BadRequest("Invalid input for query parameters %s. Additional properties are not allowed (%s unexpected)",
		strings.Join(extra, ", "), strings.Join(extra, ", "))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checkQuotaName holds a project, user or class name to what the quotas
// store: 1 to 255 characters, no control character.
func checkQuotaName(what, s string) error {
	if s == "" || len(s) > 255 || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return core.BadRequest("Invalid input for field/attribute %s: it must be 1 to 255 characters, without control characters", what)
	}
	return nil
}

// ShowQuotaSet is GET /os-quota-sets/{project_id}: the project's limits,
// or a user's in it with ?user_id=.
func (h *Handlers) ShowQuotaSet(c echo.Context) error {
	project, user, err := quotaSetProject(c, "show")
	if err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := quotaItem{id: project, limits: h.st.Store().ProjectQuotas(project, user)}
	return c.JSON(http.StatusOK, map[string]any{"quota_set": quotaSetTable.render(c, quotaShow, q)})
}

// QuotaSetDetail is GET /os-quota-sets/{project_id}/detail: each limit
// with what the project (or the user) uses of it.
func (h *Handlers) QuotaSetDetail(c echo.Context) error {
	project, user, err := quotaSetProject(c, "detail")
	if err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	st := h.st.Store()
	q := quotaItem{id: project, limits: st.ProjectQuotas(project, user), inUse: st.QuotaUsage(project, user)}
	return c.JSON(http.StatusOK, map[string]any{"quota_set": quotaSetTable.render(c, quotaDetail, q)})
}

// QuotaSetDefaults is GET /os-quota-sets/{project_id}/defaults: the
// limits of a project that has none of its own.
func (h *Handlers) QuotaSetDefaults(c echo.Context) error {
	project := c.Param("id")
	if err := checkQuotaName("project id", project); err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := quotaItem{id: project, limits: h.st.Store().DefaultQuotas()}
	return c.JSON(http.StatusOK, map[string]any{"quota_set": quotaSetTable.render(c, quotaShow, q)})
}

// UpdateQuotaSet is PUT /os-quota-sets/{project_id}: an admin sets some
// of a project's limits, or a user's with ?user_id=; without "force", a
// limit below what is used is refused, as in Nova.
func (h *Handlers) UpdateQuotaSet(c echo.Context) error {
	project, user, err := quotaSetProject(c, "update")
	if err != nil {
		return err
	}
	if user != "" {
		if err := checkQuotaName("user_id", user); err != nil {
			return err
		}
	}
	body, err := bindQuotaBody(c, "quota_set")
	if err != nil {
		return err
	}
	limits, force, err := parseQuotaLimits(body, quotaSetTable, quotaUpdate, c, true)
	if err != nil {
		return err
	}
	if len(limits) > 0 {
		if err := h.st.ProposeAndRead(c, &fsm.UpdateQuotas{ProjectID: project, UserID: user, Limits: limits, Force: force}); err != nil {
			return err
		}
	}
	q := quotaItem{limits: h.st.Store().ProjectQuotas(project, user)}
	return c.JSON(http.StatusOK, map[string]any{"quota_set": quotaSetTable.render(c, quotaUpdate, q)})
}

// DeleteQuotaSet is DELETE /os-quota-sets/{project_id}: the project (and
// its users), or one user with ?user_id=, back to the defaults.
func (h *Handlers) DeleteQuotaSet(c echo.Context) error {
	project, user, err := quotaSetProject(c, "delete")
	if err != nil {
		return err
	}
	if user != "" {
		if err := checkQuotaName("user_id", user); err != nil {
			return err
		}
	}
	if err := h.st.Propose(c, &fsm.DeleteQuotas{ProjectID: project, UserID: user}); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

// ShowQuotaClassSet is GET /os-quota-class-sets/{class}: the class's
// limits, [quota]'s where it sets none. Only the "default" class counts:
// its limits are every project's defaults.
func (h *Handlers) ShowQuotaClassSet(c echo.Context) error {
	class := c.Param("id")
	if err := checkQuotaName("quota_class_name", class); err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := quotaItem{id: class, limits: h.st.Store().ClassQuotas(class)}
	return c.JSON(http.StatusOK, map[string]any{"quota_class_set": quotaClassTable.render(c, quotaClassShow, q)})
}

// UpdateQuotaClassSet is PUT /os-quota-class-sets/{class}.
func (h *Handlers) UpdateQuotaClassSet(c echo.Context) error {
	class := c.Param("id")
	if err := checkQuotaName("quota_class_name", class); err != nil {
		return err
	}
	body, err := bindQuotaBody(c, "quota_class_set")
	if err != nil {
		return err
	}
	limits, _, err := parseQuotaLimits(body, quotaClassTable, quotaClassUpdate, c, false)
	if err != nil {
		return err
	}
	if len(limits) > 0 {
		if err := h.st.ProposeAndRead(c, &fsm.UpdateQuotas{Class: class, Limits: limits}); err != nil {
			return err
		}
	}
	q := quotaItem{limits: h.st.Store().ClassQuotas(class)}
	return c.JSON(http.StatusOK, map[string]any{"quota_class_set": quotaClassTable.render(c, quotaClassUpdate, q)})
}

// bindQuotaBody reads {key: {resource: limit, ...}}.
func bindQuotaBody(c echo.Context, key string) (map[string]json.RawMessage, error) {
	var body map[string]json.RawMessage
	if err := core.BindStrict(c, &body); err != nil {
		return nil, err
	}
	for k := range body {
		if k != key {
			return nil, core.BadRequest("Invalid input for field/attribute %s. Additional properties are not allowed (%q was unexpected)", k, k)
		}
	}
	raw, ok := body[key]
	if !ok {
		return nil, core.BadRequest("Invalid input: '%s' is a required property", key)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil || set == nil {
		return nil, core.BadRequest("Invalid input for field/attribute %s. Value: %s. It is not of type 'object'", key, raw)
	}
	return set, nil
}

// quotaNumber is what Nova's schema takes as a limit: an integer, or a
// string of one.
var quotaNumber = regexp.MustCompile(`^-?[0-9]+$`)

// parseQuotaLimits reads a quota update's resources, as Nova's schemas
// take them at the request's microversion: the resources the view shows
// there (those it dropped are refused) and the server groups', "force"
// (a boolean) where allowed.
func parseQuotaLimits(set map[string]json.RawMessage, t *table[quotaItem], in view, c echo.Context, allowForce bool) (fsm.QuotaLimits, bool, error) {
	shown := map[string]bool{}
	mv := microversion(c)
	for _, f := range t.fields {
		if f.in&in != 0 && f.holds(mv) {
			shown[f.name] = true
		}
	}
	limits, force := fsm.QuotaLimits{}, false
	for _, k := range sortedRaw(set) {
		raw := set[k]
		if k == "force" && allowForce {
			b, err := novaBool(raw)
			if err != nil {
				return nil, false, core.BadRequest("Invalid input for field/attribute force. Value: %s. %v", raw, err)
			}
			force = b
			continue
		}
		// Nova's schemas take the server groups' limits at every
		// microversion, though os-quota-class-sets shows them from 2.50.
		groups := k == fsm.QuotaServerGroups || k == fsm.QuotaServerGroupMembers
		if !shown[k] && !groups || !fsm.IsQuotaResource(k) {
			return nil, false, core.BadRequest("Invalid input for field/attribute quota_set. Additional properties are not allowed (%q was unexpected)", k)
		}
		v, err := quotaLimit(raw)
		if err != nil {
			return nil, false, core.BadRequest("Invalid input for field/attribute %s. Value: %s. %v", k, raw, err)
		}
		limits[k] = v
	}
	return limits, force, nil
}

func sortedRaw(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quotaLimit is one limit: -1 to fsm.MaxQuotaLimit.
func quotaLimit(raw json.RawMessage) (int64, error) {
	var s string
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	} else {
		s = string(raw)
	}
	if !quotaNumber.MatchString(s) {
		return 0, fmt.Errorf("it is not an integer")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < fsm.QuotaUnlimited || v > fsm.MaxQuotaLimit {
		return 0, fmt.Errorf("it must be -1 (unlimited) to %d", fsm.MaxQuotaLimit)
	}
	return v, nil
}

// novaBool is Nova's parameter_types.boolean: true or false, or one of
// the strings it lists.
func novaBool(raw json.RawMessage) (bool, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, err
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch x {
		case "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes":
			return true, nil
		case "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no":
			return false, nil
		}
	}
	return false, fmt.Errorf("it is not a boolean")
}
