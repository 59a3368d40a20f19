package nova

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// A server's security groups with [neutron], as Nova keeps them in
// Neutron (nova/network/security_group_api.py): a boot's groups resolved
// in the server's project (by id, then by name) and given to the ports
// the owner creates; the server view's security_groups from the groups
// recorded with its ports (server_view.go); GET
// /servers/{id}/os-security-groups from Neutron; and the actions
// addSecurityGroup and removeSecurityGroup, committed here
// (fsm.RequestSecurityGroupAction) and carried out on every port by the
// server's owner, each port's change after its intent at its epoch. The
// action answers once the owner is done (202), so a show right after it
// sees the change. Without [neutron] every server is in the one nominal
// group "default" and neither action exists, as before.

// securityGroupWait bounds how long an action waits for the owner.
const securityGroupWait = 2 * time.Minute

// securityGroupCommands are the commands of the security groups: used
// once every live peer knows them.
var securityGroupCommands = []fsm.CommandType{fsm.CmdRequestSecurityGroupAction, fsm.CmdFinishSecurityGroupAction,
	fsm.CmdSetPortIntent, fsm.CmdRecordServerPort, fsm.CmdForgetServerPort}

// errNoUniqueGroup is Nova's 409 for a name several groups have.
func errNoUniqueGroup(name string) error {
	return echo.NewHTTPError(http.StatusConflict,
		fmt.Sprintf("Multiple security_group matches found for name '%s', use an ID to be more specific.", name))
}

// findSecurityGroup resolves name (a group's id or name) as Nova's
// find_resourceid_by_name_or_id does: a group of project with that id (any
// project's for an admin; looked for only when name is a UUID, as
// neutronclient does), else the one group of project with that name.
// found is false when there is none; several of that name are Nova's 409.
func (h *Handlers) findSecurityGroup(ctx context.Context, name, project string, admin bool) (g neutron.SecurityGroup, found bool, err error) {
	if uuid.Validate(name) == nil {
		byID, err := h.networks.SecurityGroups(ctx, neutron.SecurityGroupFilter{IDs: []string{name}})
		if err != nil {
			return g, false, neutronUnavailable("security group "+name, err)
		}
		for _, g := range byID {
			if g.ID == name && (admin || g.ProjectID == project) {
				return g, true, nil
			}
		}
	}
	byName, err := h.networks.SecurityGroups(ctx, neutron.SecurityGroupFilter{ProjectID: project, Name: name})
	if err != nil {
		return g, false, neutronUnavailable("security group "+name, err)
	}
	switch len(byName) {
	case 0:
		return g, false, nil
	case 1:
		return byName[0], true, nil
	}
	return g, false, errNoUniqueGroup(name)
}

// bootSecurityGroups resolves a boot's security_groups (names or ids, each
// once, as Nova takes them) for project: none, or "default" alone, is
// Neutron's default group (nothing to record); an unknown one is Nova's
// 400. Without [neutron] only "default" exists.
func (h *Handlers) bootSecurityGroups(c echo.Context, groups []securityGroup, project string) ([]fsm.SecurityGroupRef, error) {
	var names []string
	for _, sg := range groups {
		if sg.Name != nil && *sg.Name != "" && !slices.Contains(names, *sg.Name) {
			names = append(names, *sg.Name)
		}
	}
	if h.networks == nil {
		return nil, checkSecurityGroups(groups)
	}
	if len(names) == 0 || len(names) == 1 && names[0] == defaultSecurityGroup {
		return nil, nil
	}
	if len(names) > fsm.MaxSecurityGroups {
		return nil, invalidInput("security_groups", fmt.Sprintf("%d groups", len(names)),
			fmt.Sprintf("a server has at most %d security groups", fsm.MaxSecurityGroups))
	}
	admin := core.CallerOf(c).SeesEveryProject()
	var out []fsm.SecurityGroupRef
	for _, name := range names {
		g, found, err := h.findSecurityGroup(c.Request().Context(), name, project, admin)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, core.BadRequest("Unable to find security_group with name or id '%s'", name)
		}
		if !slices.ContainsFunc(out, func(r fsm.SecurityGroupRef) bool { return r.ID == g.ID }) {
			out = append(out, fsm.SecurityGroupRef{ID: g.ID, Name: g.Name})
		}
	}
	if !h.known(securityGroupCommands...) {
		return nil, notYet("Security groups other than default")
	}
	return out, nil
}

// securityGroupAction is the server action addSecurityGroup or
// removeSecurityGroup, with [neutron].
func (h *Handlers) securityGroupAction(c echo.Context, v fsm.Server, action string, raw json.RawMessage) error {
	var body any
	if err := json.Unmarshal(raw, &body); err != nil {
		return core.BadRequest("Missing parameter dict")
	}
	arg, ok := body.(map[string]any)
	if !ok {
		return core.BadRequest("Missing parameter dict")
	}
	nameV, ok := arg["name"]
	if !ok {
		return core.BadRequest("Security group not specified")
	}
	name, ok := nameV.(string)
	if !ok {
		return core.BadRequest("Invalid input for field/attribute name. Value: %v. %v is not of type 'string'", nameV, nameV)
	}
	if strings.TrimSpace(name) == "" {
		return core.BadRequest("Security group name cannot be empty")
	}
	for k := range arg {
		if k != "name" {
			return core.BadRequest("Invalid input for field/attribute %s. Additional properties are not allowed ('%s' was unexpected)", action, k)
		}
	}
	if len(name) > 255 {
		return invalidInput("name", name, "it is longer than 255 characters")
	}
	g, found, err := h.findSecurityGroup(c.Request().Context(), name, v.ProjectID, core.CallerOf(c).SeesEveryProject())
	if err != nil {
		return err
	}
	if !found {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Security group %s is not found for project %s", name, v.ProjectID))
	}
	if !h.known(securityGroupCommands...) {
		return notYet("A server's security groups")
	}
	kind := fsm.ActionAddSecurityGroup
	if action == "removeSecurityGroup" {
		kind = fsm.ActionRemoveSecurityGroup
	}
	// The owner's outcome is awaited in this peer's replica: it must
	// hold the request first.
	cmd := &fsm.RequestSecurityGroupAction{ID: v.ID, Kind: kind, Group: fsm.SecurityGroupRef{ID: g.ID, Name: g.Name}}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		if errors.Is(err, fsm.ErrNotFound) && strings.Contains(err.Error(), "device id") {
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("instance_id %s could not be found as device id on any ports", v.ID))
		}
		return actionConflict(err, v.ID)
	}
	req, err := h.awaitSecurityGroup(c, v.ID, core.RequestID(c))
	if err != nil {
		return err
	}
	if req.Code != 0 {
		return echo.NewHTTPError(req.Code, req.Fault)
	}
	return c.NoContent(http.StatusAccepted)
}

// awaitSecurityGroup waits until the owner finished the security group
// request of request id on server sid, and returns it; the request
// dropped (the server deleted or reset) or not finished in time is a 500.
func (h *Handlers) awaitSecurityGroup(c echo.Context, sid, requestID string) (fsm.SecurityGroupRequest, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), securityGroupWait)
	defer cancel()
	store := h.st.Store()
	for {
		idx := store.AppliedIndex()
		r := store.ServerNet(sid).SecurityGroup
		if r == nil || r.RequestID != requestID {
			return fsm.SecurityGroupRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("The security groups of server %s were not changed: the request was dropped", sid))
		}
		if r.Done {
			return *r, nil
		}
		if s, err := store.Server(sid); err != nil || s.Action == nil || s.Action.Kind != r.Kind || !s.Action.RequestedAt.Equal(r.RequestedAt) {
			return fsm.SecurityGroupRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("The security groups of server %s were not changed: the request was dropped", sid))
		}
		if err := store.WaitApplied(ctx, idx+1); err != nil {
			return fsm.SecurityGroupRequest{}, echo.NewHTTPError(http.StatusInternalServerError,
				fmt.Sprintf("The security groups of server %s: its owner did not finish within %s; the change goes on", sid, securityGroupWait))
		}
	}
}

// ListServerSecurityGroups is GET /servers/{id}/os-security-groups: the
// groups of the server's ports, as Neutron has them, in Nova's shape
// (ingress rules only), sorted by project and name. Without [neutron]:
// Nova's 501 without a network API.
func (h *Handlers) ListServerSecurityGroups(c echo.Context) error {
	v, err := h.serverForEdit(c)
	if err != nil {
		return err
	}
	if h.networks == nil {
		return echo.NewHTTPError(http.StatusNotImplemented, "Network driver does not support this function.")
	}
	var ids []string
	for _, p := range h.st.Store().ServerNet(v.ID).Ports {
		for _, g := range p.SecurityGroups {
			if !slices.Contains(ids, g.ID) {
				ids = append(ids, g.ID)
			}
		}
	}
	out := []map[string]any{}
	if len(ids) > 0 {
		ctx := c.Request().Context()
		groups, err := h.networks.SecurityGroups(ctx, neutron.SecurityGroupFilter{IDs: ids})
		if err != nil {
			return neutronUnavailable("the security groups of server "+v.ID, err)
		}
		known := map[string]neutron.SecurityGroup{}
		for _, g := range groups {
			known[g.ID] = g
		}
		var remote []string
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.RemoteGroupID != "" && known[r.RemoteGroupID].ID == "" && !slices.Contains(remote, r.RemoteGroupID) {
					remote = append(remote, r.RemoteGroupID)
				}
			}
		}
		if len(remote) > 0 {
			more, err := h.networks.SecurityGroups(ctx, neutron.SecurityGroupFilter{IDs: remote})
			if err != nil {
				return neutronUnavailable("the security groups of server "+v.ID, err)
			}
			for _, g := range more {
				known[g.ID] = g
			}
		}
		for _, g := range groups {
			out = append(out, novaSecurityGroup(g, known))
		}
		slices.SortStableFunc(out, func(a, b map[string]any) int {
			if c := strings.Compare(a["tenant_id"].(string), b["tenant_id"].(string)); c != 0 {
				return c
			}
			return strings.Compare(a["name"].(string), b["name"].(string))
		})
	}
	return c.JSON(http.StatusOK, map[string]any{"security_groups": out})
}

// novaSecurityGroup is Nova's view of a Neutron group: its ingress rules,
// a rule's remote group by name and project (a rule of a group gone is
// left out), its address range otherwise (0.0.0.0/0 for any).
func novaSecurityGroup(g neutron.SecurityGroup, known map[string]neutron.SecurityGroup) map[string]any {
	rules := []map[string]any{}
	for _, r := range g.Rules {
		if r.Direction != "ingress" {
			continue
		}
		rule := map[string]any{"id": r.ID, "parent_group_id": r.SecurityGroupID, "ip_protocol": nullable(r.Protocol),
			"group": map[string]any{}, "ip_range": map[string]any{}}
		switch p := strings.ToUpper(r.Protocol); {
		case p != "" && r.PortRangeMin == nil && r.PortRangeMax == nil && (p == "TCP" || p == "UDP"):
			rule["from_port"], rule["to_port"] = 1, 65535
		case p != "" && r.PortRangeMin == nil && r.PortRangeMax == nil:
			rule["from_port"], rule["to_port"] = -1, -1
		default:
			rule["from_port"], rule["to_port"] = intOrNull(r.PortRangeMin), intOrNull(r.PortRangeMax)
		}
		switch {
		case r.RemoteGroupID != "":
			src, ok := known[r.RemoteGroupID]
			if !ok {
				continue
			}
			rule["group"] = map[string]any{"name": src.Name, "tenant_id": src.ProjectID}
		case r.RemoteIPPrefix != "":
			rule["ip_range"] = map[string]any{"cidr": r.RemoteIPPrefix}
		default:
			rule["ip_range"] = map[string]any{"cidr": "0.0.0.0/0"}
		}
		rules = append(rules, rule)
	}
	return map[string]any{"id": g.ID, "name": g.Name, "description": g.Description, "tenant_id": g.ProjectID, "rules": rules}
}

func intOrNull(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// serverSecurityGroups is the server view's security_groups: without
// [neutron] the nominal "default"; with it, each port's groups by name
// (a group without one by id), a group on two ports twice, as Nova lists
// them; a port recorded before its groups were kept counts as in
// "default"; no group on any port omits the field, as Nova does.
func serverSecurityGroups(s serverItem) any {
	if !s.neutron {
		return defaultSecurityGroups(s)
	}
	var out []map[string]string
	for _, p := range s.net.Ports {
		if !p.GroupsKnown {
			out = append(out, map[string]string{"name": defaultSecurityGroup})
			continue
		}
		for _, g := range p.SecurityGroups {
			name := g.Name
			if name == "" {
				name = g.ID
			}
			out = append(out, map[string]string{"name": name})
		}
	}
	if len(out) == 0 {
		return omit
	}
	return out
}
