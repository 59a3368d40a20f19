package nova

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// CreateServer is POST /servers.
func (h *Handlers) CreateServer(c echo.Context) error {
	var body serverCreateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.Server
	if in == nil {
		return core.BadRequest(`the body must be {"server": {...}}`)
	}
	flavorRef, err := h.checkBoot(c, in)
	if err != nil {
		return err
	}
	flavorID := path.Base(strings.TrimRight(flavorRef, "/"))
	nets, err := parseNetworks(c, in.Networks) // boot.go
	if err != nil {
		return err
	}
	cl := core.CallerOf(c)
	if !cl.Static && cl.Project == "" {
		return fmt.Errorf("%w: a server belongs to a project: boot it with a project-scoped token", core.ErrForbidden)
	}
	// The flavor is checked when the entry applies, against the leader's
	// state: this peer's replica may not have a flavor created elsewhere
	// yet. What a private flavor's access and the image's minimums need
	// of it is checked here when the replica has it.
	if err := checkFlavorAccess(c, h.st.Store(), flavorID); err != nil { // flavor_access.go
		return err
	}
	image, im, err := h.checkImageRef(c, in.ImageRef) // images.go
	if err != nil {
		return err
	}
	if im != nil {
		if f, ok := h.bootFlavor(c, flavorID); ok {
			if err := checkImageFits(im, f); err != nil {
				return err
			}
		}
	}
	keyName := ""
	if in.KeyName != nil {
		keyName = *in.KeyName
	}
	id := uuid.NewString()
	cmd := &fsm.CreateServer{ID: id, Name: *in.Name, FlavorID: flavorID, ImageRef: image,
		Networks: nets, Metadata: in.Metadata, ProjectID: cl.Project, UserID: cl.User, KeyName: keyName, UserData: in.UserData}
	if err := h.st.Propose(c, cmd); err != nil {
		return err
	}
	diskConfig := "MANUAL"
	if in.DiskConfig != nil {
		diskConfig = *in.DiskConfig
	}
	return c.JSON(http.StatusAccepted, map[string]any{"server": map[string]any{
		"id": id, "links": serverLinks(c, id), "OS-DCF:diskConfig": diskConfig,
		"security_groups": []map[string]string{{"name": "default"}},
	}})
}

// ListServers is GET /servers, or with detail /servers/detail.
func (h *Handlers) ListServers(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.st.ReadBarrier(c); err != nil {
			return err
		}
		q := c.QueryParams()
		p, err := parsePage(q, limitZeroIsAll)
		if err != nil {
			return err
		}
		project, err := listProject(core.CallerOf(c), q)
		if err != nil {
			return err
		}
		since, err := timeQuery(q, "changes-since") // deleted servers too, as Nova
		if err != nil {
			return err
		}
		all := h.st.Store().Servers()
		sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) }) // newest first, like Nova
		listed, more, err := pageOf(all, p, func(v fsm.Server) string { return v.ID }, func(v fsm.Server) bool {
			switch {
			case !since.IsZero() && v.UpdatedAt.Before(since):
				return false
			case !v.Live() && q.Get("deleted") != "true" && since.IsZero():
				return false
			case project != "" && v.Project() != project:
				return false
			case q.Get("status") != "" && !strings.EqualFold(q.Get("status"), string(v.Status)):
				return false
			case q.Get("host") != "" && q.Get("host") != v.Host:
				return false
			case q.Get("name") != "" && !strings.Contains(v.Name, q.Get("name")):
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		out := make([]any, 0, len(listed))
		for _, v := range listed {
			if detail {
				out = append(out, h.serverView(c, v))
			} else {
				out = append(out, map[string]any{"id": v.ID, "name": v.Name, "links": serverLinks(c, v.ID)})
			}
		}
		resp := map[string]any{"servers": out}
		if more && len(listed) > 0 {
			resp["servers_links"] = nextLinks(c, listed[len(listed)-1].ID)
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// GetServer is GET /servers/{id}.
func (h *Handlers) GetServer(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	v, err := h.visibleServer(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": h.serverView(c, v)})
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
