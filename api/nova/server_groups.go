package nova

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/sched"
)

// Server groups, as Nova's os-server-groups: a project's set of servers
// with a policy over the hosts that own them (fsm/server_group.go). A
// server joins a group when it is booted with the scheduler hint
// {"group": ID}.

// The views of a server group (nova/api/openstack/compute/server_groups.py
// _format_server_group): one shape for show, create and the list.
const (
	serverGroupShow view = 1 << iota
)

var serverGroupTable = &table[fsm.ServerGroup]{
	resource: "server_group",
	views:    []string{"show"},
	fields: []field[fsm.ServerGroup]{
		{name: "id", in: serverGroupShow, value: func(g fsm.ServerGroup) any { return g.ID }},
		{name: "name", in: serverGroupShow, value: func(g fsm.ServerGroup) any { return g.Name }},
		{name: "policies", until: v2(63), in: serverGroupShow, value: func(g fsm.ServerGroup) any { return []string{g.Policy} }},
		{name: "policy", since: v2(64), in: serverGroupShow, value: func(g fsm.ServerGroup) any { return g.Policy }},
		{name: "rules", since: v2(64), in: serverGroupShow, value: func(g fsm.ServerGroup) any {
			if g.MaxServerPerHost > 0 {
				return map[string]any{"max_server_per_host": g.MaxServerPerHost}
			}
			return map[string]any{}
		}},
		{name: "members", in: serverGroupShow, value: func(g fsm.ServerGroup) any {
			if g.Members == nil {
				return []string{}
			}
			return g.Members
		}},
		{name: "metadata", until: v2(63), in: serverGroupShow, value: func(fsm.ServerGroup) any { return map[string]string{} }},
		{name: "project_id", since: v2(13), in: serverGroupShow, value: func(g fsm.ServerGroup) any { return g.ProjectID }},
		{name: "user_id", since: v2(13), in: serverGroupShow, value: func(g fsm.ServerGroup) any { return g.UserID }},
	},
}

// serverGroupInput is the body of POST /os-server-groups, read by
// microversion: policies (a list of one) until 2.63, policy and rules
// from 2.64.
func serverGroupInput(c echo.Context) (fsm.ServerGroup, error) {
	var body struct {
		ServerGroup map[string]json.RawMessage `json:"server_group"`
	}
	if err := core.BindStrict(c, &body); err != nil {
		return fsm.ServerGroup{}, err
	}
	in := body.ServerGroup
	if in == nil {
		return fsm.ServerGroup{}, core.BadRequest("Invalid input for field/attribute server_group. Value: None. None is not of type 'object'")
	}
	newShape := mvAtLeast(c, 2, 64)
	known := map[string]bool{"name": true, "policies": !newShape, "policy": newShape, "rules": newShape}
	for k := range in {
		if !known[k] {
			return fsm.ServerGroup{}, core.BadRequest("Additional properties are not allowed ('%s' was unexpected)", k)
		}
	}
	var g fsm.ServerGroup
	if err := groupString(in, "name", &g.Name); err != nil {
		return g, err
	}
	if err := checkGroupName(g.Name); err != nil {
		return g, err
	}
	if newShape {
		if err := groupString(in, "policy", &g.Policy); err != nil {
			return g, err
		}
		if !groupPolicyAllowed(c, g.Policy) {
			return g, core.BadRequest("Invalid input for field/attribute policy. Value: %s. %q is not one of %s", g.Policy, g.Policy, policyChoices(c))
		}
		n, err := groupRules(in["rules"])
		if err != nil {
			return g, err
		}
		if n > 0 && g.Policy != sched.PolicyAntiAffinity {
			return g, core.BadRequest("Only anti-affinity policy supports rules.")
		}
		g.MaxServerPerHost = n
		return g, nil
	}
	raw, ok := in["policies"]
	if !ok {
		return g, core.BadRequest("Invalid input for field/attribute server_group. Value: %s. 'policies' is a required property", compactJSON(in))
	}
	var policies []string
	if err := json.Unmarshal(raw, &policies); err != nil || len(policies) != 1 {
		return g, core.BadRequest("Invalid input for field/attribute policies. Value: %s. It must be a list of exactly one policy", raw)
	}
	if !groupPolicyAllowed(c, policies[0]) {
		return g, core.BadRequest("Invalid input for field/attribute 0. Value: %s. %q is not one of %s", policies[0], policies[0], policyChoices(c))
	}
	g.Policy = policies[0]
	return g, nil
}

// groupString reads the required string field name of in into out.
func groupString(in map[string]json.RawMessage, name string, out *string) error {
	raw, ok := in[name]
	if !ok {
		return core.BadRequest("Invalid input for field/attribute server_group. Value: %s. '%s' is a required property", compactJSON(in), name)
	}
	if err := json.Unmarshal(raw, out); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return core.BadRequest("Invalid input for field/attribute %s. Value: %s. %s is not of type 'string'", name, raw, raw)
	}
	return nil
}

// checkGroupName holds a name to Nova's parameter_types.name: 1 to 255
// printable characters, no leading or trailing space.
func checkGroupName(name string) error {
	bad := name == "" || len([]rune(name)) > 255 || strings.TrimSpace(name) != name
	for _, r := range name {
		bad = bad || r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0
	}
	if bad {
		return core.BadRequest("Invalid input for field/attribute name. Value: %s. %q does not match the name rules: 1 to 255 printable characters, no leading or trailing whitespace", name, name)
	}
	return nil
}

// groupPolicyAllowed: affinity and anti-affinity always, the soft ones
// from 2.15.
func groupPolicyAllowed(c echo.Context, policy string) bool {
	switch policy {
	case sched.PolicyAffinity, sched.PolicyAntiAffinity:
		return true
	case sched.PolicySoftAffinity, sched.PolicySoftAntiAffinity:
		return mvAtLeast(c, 2, 15)
	}
	return false
}

func policyChoices(c echo.Context) string {
	if mvAtLeast(c, 2, 15) {
		return "['anti-affinity', 'affinity', 'soft-anti-affinity', 'soft-affinity']"
	}
	return "['anti-affinity', 'affinity']"
}

// groupRules reads 2.64's rules: {} or {"max_server_per_host": N}, N a
// positive integer (or a string of its digits, as Nova's schema takes).
func groupRules(raw json.RawMessage) (int, error) {
	if raw == nil {
		return 0, nil
	}
	var rules map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rules); err != nil || rules == nil {
		return 0, core.BadRequest("Invalid input for field/attribute rules. Value: %s. %s is not of type 'object'", raw, raw)
	}
	for k := range rules {
		if k != "max_server_per_host" {
			return 0, core.BadRequest("Invalid input for field/attribute rules. Value: %s. Additional properties are not allowed ('%s' was unexpected)", raw, k)
		}
	}
	v, ok := rules["max_server_per_host"]
	if !ok {
		return 0, nil
	}
	s := strings.Trim(string(bytes.TrimSpace(v)), `"`)
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, core.BadRequest("Invalid input for field/attribute max_server_per_host. Value: %s. %s is not a positive integer", v, v)
	}
	return n, nil
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CreateServerGroup is POST /os-server-groups.
func (h *Handlers) CreateServerGroup(c echo.Context) error {
	g, err := serverGroupInput(c)
	if err != nil {
		return err
	}
	cl := core.CallerOf(c)
	if !cl.Static && cl.Project == "" {
		return fmt.Errorf("%w: a server group belongs to a project: create it with a project-scoped token", core.ErrForbidden)
	}
	g.ID, g.ProjectID, g.UserID = uuid.NewString(), core.CallerProject(c), cl.User
	if g.UserID == "" {
		g.UserID = fsm.DefaultProject
	}
	if err := h.st.Propose(c, &fsm.CreateServerGroup{Group: g}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server_group": serverGroupTable.render(c, serverGroupShow, g)})
}

// ListServerGroups is GET /os-server-groups: the caller's project's
// groups; every project's for an admin that asks with all_projects (a
// caller that may not is answered its own, as Nova does), paged by limit
// and offset.
func (h *Handlers) ListServerGroups(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := c.QueryParams()
	offset, limit, err := offsetPage(q.Get("offset"), q.Get("limit"))
	if err != nil {
		return err
	}
	all := q.Has("all_projects") && core.CallerOf(c).SeesEveryProject()
	project := core.CallerProject(c)
	out := []map[string]any{}
	n := 0
	for _, g := range h.st.Store().ServerGroups() {
		if !all && g.ProjectID != project {
			continue
		}
		if n++; n <= offset || len(out) == limit {
			continue
		}
		out = append(out, serverGroupTable.render(c, serverGroupShow, g))
	}
	return c.JSON(http.StatusOK, map[string]any{"server_groups": out})
}

// maxListLimit is Nova's osapi_max_limit default, the most items of an
// offset-paged list.
const maxListLimit = 1000

// offsetPage reads Nova's common.limited parameters.
func offsetPage(off, lim string) (offset, limit int, err error) {
	limit = maxListLimit
	if off != "" {
		if offset, err = strconv.Atoi(off); err != nil || offset < 0 {
			return 0, 0, core.BadRequest("Invalid input for query parameters offset. Value: %s. %q is not a non-negative integer", off, off)
		}
	}
	if lim != "" {
		n, err := strconv.Atoi(lim)
		if err != nil || n < 0 {
			return 0, 0, core.BadRequest("Invalid input for query parameters limit. Value: %s. %q is not a non-negative integer", lim, lim)
		}
		limit = min(n, maxListLimit)
	}
	return offset, limit, nil
}

// visibleGroup is a server group the caller may read or delete: its
// project's, any for an admin; another project's is not found, as Nova's
// instance group query keeps a non-admin to its project.
func (h *Handlers) visibleGroup(c echo.Context, id string) (fsm.ServerGroup, error) {
	g, err := h.st.Store().ServerGroup(id)
	if err != nil || !core.CallerOf(c).SeesEveryProject() && g.ProjectID != core.CallerProject(c) {
		return fsm.ServerGroup{}, echo.NewHTTPError(http.StatusNotFound, "Instance group "+id+" could not be found.")
	}
	return g, nil
}

// GetServerGroup is GET /os-server-groups/{id}.
func (h *Handlers) GetServerGroup(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	g, err := h.visibleGroup(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server_group": serverGroupTable.render(c, serverGroupShow, g)})
}

// DeleteServerGroup is DELETE /os-server-groups/{id}; its members stay.
func (h *Handlers) DeleteServerGroup(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	if _, err := h.visibleGroup(c, c.Param("id")); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.DeleteServerGroup{ID: c.Param("id")}); err != nil {
		if errors.Is(err, fsm.ErrNotFound) {
			return echo.NewHTTPError(http.StatusNotFound, "Instance group "+c.Param("id")+" could not be found.")
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// bootGroup is the group of a boot's scheduler hints ("" for none): a
// server group's uuid, as Nova's schema has it, of the caller's project
// unless the caller is an admin (Apply checks that it exists).
func (h *Handlers) bootGroup(c echo.Context, hints map[string]any) (string, error) {
	id, err := schedulerGroup(hints)
	if err != nil || id == "" || core.CallerOf(c).SeesEveryProject() {
		return id, err
	}
	// This replica may not have applied a group created elsewhere yet.
	if _, err := h.bootState(c); err != nil {
		return "", err
	}
	if _, err := h.visibleGroup(c, id); err != nil {
		return "", core.BadRequest("Invalid input: instance group %s could not be found.", id)
	}
	return id, nil
}

// schedulerGroup reads the group of a boot's scheduler hints.
func schedulerGroup(hints map[string]any) (string, error) {
	v, ok := hints["group"]
	if !ok {
		return "", nil
	}
	s, isString := v.(string)
	if !isString || uuid.Validate(s) != nil {
		return "", core.BadRequest("Invalid input for field/attribute group. Value: %v. %q is not a 'uuid'", v, fmt.Sprint(v))
	}
	return s, nil
}
