package nova

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Flavor updates (the description, from microversion 2.55) and access to
// private flavors (os-flavor-access), as Nova has them.

// isPublic is the is_public filter of a flavor list.
type isPublic int

const (
	publicOnly  isPublic = iota // public flavors and the private ones the project may use (the default)
	privateOnly                 // only private flavors
	publicAny                   // every flavor ("none")
)

// parseIsPublic reads is_public as Nova's flavor list does for callers that
// see every project: absent, it lists public flavors; "none" (any case)
// lists all; else it is one of oslo's boolean words (t, true, on, y, yes, 1
// and f, false, off, n, no, 0, any case, spaces around ignored), and any
// other value (the empty one too) is Nova's 400. Other callers' is_public
// is ignored, as in Nova.
func parseIsPublic(c echo.Context, q url.Values) (isPublic, error) {
	vs, given := q["is_public"]
	if !given || !core.CallerOf(c).SeesEveryProject() {
		return publicOnly, nil
	}
	raw := vs[len(vs)-1] // the last, as webob reads a repeated parameter
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "t", "true", "on", "y", "yes", "1":
		return publicOnly, nil
	case "f", "false", "off", "n", "no", "0":
		return privateOnly, nil
	}
	if strings.ToLower(raw) == "none" {
		return publicAny, nil
	}
	return publicOnly, core.BadRequest("Invalid is_public filter [%s]", raw)
}

// flavorListed decides whether a flavor appears in a flavor list, given
// its is_public filter: public flavors by default, and the private ones the
// caller's project may use (as Nova's is_public=True filter); only
// private ones for false; all for none. Project callers always see just
// what they may use, whatever is_public says, as in Nova.
func flavorListed(c echo.Context, f fsm.Flavor, public isPublic) bool {
	if !core.CallerOf(c).SeesEveryProject() {
		return f.MayUse(core.CallerProject(c))
	}
	switch public {
	case publicOnly:
		return f.MayUse(core.CallerProject(c))
	case privateOnly:
		return !f.IsPublic
	}
	return true
}

// flavorVisible reports whether the caller may see (and boot with) the
// flavor: callers that see every project see every flavor.
func flavorVisible(c echo.Context, f fsm.Flavor) bool {
	return core.CallerOf(c).SeesEveryProject() || f.MayUse(core.CallerProject(c))
}

func flavorNotFound(id string) error {
	return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Flavor %s could not be found.", id))
}

// UpdateFlavor is PUT /flavors/{id} (2.55+): {"flavor": {"description": ...}}.
func (h *Handlers) UpdateFlavor(c echo.Context) error {
	if !mvAtLeast(c, 2, 55) {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	var body wire.FlavorUpdateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if body.Flavor == nil || body.Flavor.Description == nil {
		return core.BadRequest(`the body must be {"flavor": {"description": "..."}}: the description is the one field that may change`)
	}
	var desc *string
	if err := json.Unmarshal(body.Flavor.Description, &desc); err != nil {
		return core.BadRequest("description must be a string or null")
	}
	cmd := &fsm.UpdateFlavor{ID: c.Param("id")}
	if desc != nil {
		if err := checkDescription("description", *desc, fsm.MaxFlavorDescriptionLen); err != nil {
			return err
		}
		cmd.Description = *desc
	}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		if errors.Is(err, fsm.ErrNotFound) {
			return flavorNotFound(c.Param("id"))
		}
		return err
	}
	f, err := h.st.Store().Flavor(cmd.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, flavorShow, f)})
}

// flavorAccessList is Nova's body of os-flavor-access answers.
func flavorAccessList(f fsm.Flavor) wire.FlavorAccessResponse {
	out := make([]wire.FlavorAccess, 0, len(f.Access))
	for _, p := range f.Access {
		out = append(out, wire.FlavorAccess{FlavorID: f.ID, TenantID: p})
	}
	return wire.FlavorAccessResponse{FlavorAccess: out}
}

// ListFlavorAccess is GET /flavors/{id}/os-flavor-access.
func (h *Handlers) ListFlavorAccess(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	f, err := h.st.Store().Flavor(c.Param("id"))
	if err != nil {
		return flavorNotFound(c.Param("id"))
	}
	if f.IsPublic {
		return echo.NewHTTPError(http.StatusNotFound, "Access list not available for public flavors.")
	}
	return c.JSON(http.StatusOK, flavorAccessList(f))
}

// FlavorAction is POST /flavors/{id}/action: addTenantAccess or
// removeTenantAccess, {"tenant": PROJECT}.
func (h *Handlers) FlavorAction(c echo.Context) error {
	var body wire.FlavorAccessAction
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	cmd := &fsm.SetFlavorAccess{ID: c.Param("id")}
	switch {
	case body.Add != nil && body.Remove == nil:
		cmd.Project, cmd.Add = body.Add.Tenant, true
	case body.Remove != nil && body.Add == nil:
		cmd.Project = body.Remove.Tenant
	default:
		return core.BadRequest(`the body must be {"addTenantAccess": {"tenant": PROJECT}} or {"removeTenantAccess": {"tenant": PROJECT}}`)
	}
	if cmd.Project == "" {
		return core.BadRequest("tenant is required: the id of the project to give or take access")
	}
	if err := fsm.CheckText("tenant", cmd.Project, maxNameLen, false); err != nil {
		return invalidInput("tenant", cmd.Project, "a project id is 1 to 255 characters without control characters")
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	f, err := h.st.Store().Flavor(cmd.ID)
	if err != nil {
		return flavorNotFound(cmd.ID)
	}
	if f.IsPublic {
		return echo.NewHTTPError(http.StatusConflict, "Can not add access to a public flavor.")
	}
	if err := h.st.ProposeAndRead(c, cmd); err != nil {
		return err
	}
	if f, err = h.st.Store().Flavor(cmd.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, flavorAccessList(f))
}

// checkFlavorAccess refuses a boot with a private flavor the caller's
// project may not use (callers that see every project may use any), read
// after a read barrier (bootState): this replica may not have applied the
// flavor, a change of its access, or its deletion and creation again as
// private, which a write through any peer was answered for. A flavor
// unknown to the leader too is refused by its Apply.
func (h *Handlers) checkFlavorAccess(c echo.Context, flavorID string) error {
	if core.CallerOf(c).SeesEveryProject() {
		return nil
	}
	st, err := h.bootState(c) // server_create.go
	if err != nil {
		return err
	}
	if f, err := st.Flavor(flavorID); err == nil && !f.MayUse(core.CallerProject(c)) {
		return core.BadRequest("Invalid flavorRef provided: flavor %s is private and project %s has no access to it", flavorID, core.CallerProject(c))
	}
	return nil
}
