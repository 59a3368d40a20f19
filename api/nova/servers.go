package nova

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// GetServer is GET /servers/{id}.
func (h *Handlers) GetServer(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.visibleServer(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": h.serverView(c, serverShow, v)})
}

// DeleteServer is DELETE /servers/{id}.
func (h *Handlers) DeleteServer(c echo.Context) error {
	// No local pre-check for a caller that may delete any server: this
	// peer's replica may not have applied a create the client saw
	// acknowledged elsewhere, and the leader's Apply answers 404. A
	// project's caller is checked against the server, after a read
	// barrier for the same reason; another project's server is a 404.
	if cl := core.CallerOf(c); !cl.SeesEveryProject() {
		if err := h.st.Cluster.ReadBarrier(c.Request().Context(), cluster.Default); err != nil {
			return err
		}
		v, err := h.visibleServer(c, c.Param("id"))
		if err != nil {
			return err
		}
		if v.Locked { // only admins delete a locked server, as in Nova (actions.go)
			return echo.NewHTTPError(http.StatusConflict, "Instance "+v.ID+" is locked")
		}
	}
	err := h.st.Propose(c, &fsm.DeleteServer{ID: c.Param("id")})
	if errors.Is(err, fsm.ErrNotFound) {
		return core.ServerNotFound(c.Param("id"))
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// listProject is the project a server list is limited to ("" for every
// project), as Nova's default policy has it: a project's caller sees its
// project; a Keystone admin too, unless it asks for all_tenants, which
// only admins may; static tokens see every project. With every project,
// project_id (or tenant_id) narrows the list to one.
func listProject(cl core.Caller, q url.Values) (string, error) {
	all := false
	if q.Has("all_tenants") {
		switch strings.ToLower(strings.TrimSpace(q.Get("all_tenants"))) {
		case "", "1", "t", "true", "on", "y", "yes":
			all = true
		case "0", "f", "false", "off", "n", "no":
		default:
			return "", core.BadRequest("all_tenants %q is not a boolean (use all_tenants=1)", q.Get("all_tenants"))
		}
	}
	if all && !cl.SeesEveryProject() {
		return "", fmt.Errorf("%w: listing every project's servers (all_tenants) needs the admin role", core.ErrForbidden)
	}
	if !cl.Static && !all {
		return cl.Project, nil
	}
	if p := q.Get("project_id"); p != "" {
		return p, nil
	}
	return q.Get("tenant_id"), nil
}

// visibleServer returns a live server the caller may see: another
// project's is a 404, as in Nova. Handlers of /servers/{id} use it.
func (h *Handlers) visibleServer(c echo.Context, id string) (fsm.Server, error) {
	v, err := h.st.LiveServer(id)
	if err != nil {
		return v, err
	}
	if !core.CallerOf(c).Owns(v) {
		return fsm.Server{}, core.ServerNotFound(id)
	}
	return v, nil
}
