package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// Flavor updates (the description, from microversion 2.55) and access to
// private flavors (os-flavor-access), as Nova has them.

// callerProject is the project a request speaks for: the token's, or
// fsm.DefaultProject for static tokens.
func callerProject(c echo.Context) string {
	if p := callerOf(c).project; p != "" {
		return p
	}
	return fsm.DefaultProject
}

// flavorListed decides whether a flavor appears in a flavor list, given
// its is_public query: public flavors by default, and the private ones the
// caller's project may use (as Nova's is_public=True filter); only
// private ones for false; all for none. Project callers always see just
// what they may use, whatever is_public says, as in Nova.
func flavorListed(c echo.Context, f fsm.Flavor, public string) bool {
	if !callerOf(c).seesEveryProject() {
		return f.MayUse(callerProject(c))
	}
	switch public {
	case "", "true", "1", "yes":
		return f.MayUse(callerProject(c))
	case "false", "0", "no":
		return !f.IsPublic
	}
	return true
}

// flavorVisible reports whether the caller may see (and boot with) the
// flavor: callers that see every project see every flavor.
func flavorVisible(c echo.Context, f fsm.Flavor) bool {
	return callerOf(c).seesEveryProject() || f.MayUse(callerProject(c))
}

func flavorNotFound(id string) error {
	return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Flavor %s could not be found.", id))
}

// updateFlavor is PUT /flavors/{id} (2.55+): {"flavor": {"description": ...}}.
func (s *Server) updateFlavor(c echo.Context) error {
	if !mvAtLeast(c, 2, 55) {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	var body struct {
		Flavor *struct {
			Description json.RawMessage `json:"description"`
		} `json:"flavor"`
	}
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	if body.Flavor == nil || body.Flavor.Description == nil {
		return badRequest(`the body must be {"flavor": {"description": "..."}}: the description is the one field that may change`)
	}
	var desc *string
	if err := json.Unmarshal(body.Flavor.Description, &desc); err != nil {
		return badRequest("description must be a string or null")
	}
	cmd := &fsm.UpdateFlavor{ID: c.Param("id")}
	if desc != nil {
		cmd.Description = *desc
	}
	if err := s.propose(c, cmd); err != nil {
		if errors.Is(err, fsm.ErrNotFound) {
			return flavorNotFound(c.Param("id"))
		}
		return err
	}
	f, err := s.c.Store().Flavor(cmd.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": toNova(c, f)})
}

// flavorAccessList is Nova's body of os-flavor-access answers.
func flavorAccessList(f fsm.Flavor) map[string]any {
	out := make([]map[string]string, 0, len(f.Access))
	for _, p := range f.Access {
		out = append(out, map[string]string{"flavor_id": f.ID, "tenant_id": p})
	}
	return map[string]any{"flavor_access": out}
}

func (s *Server) listFlavorAccess(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	f, err := s.c.Store().Flavor(c.Param("id"))
	if err != nil {
		return flavorNotFound(c.Param("id"))
	}
	if f.IsPublic {
		return echo.NewHTTPError(http.StatusNotFound, "Access list not available for public flavors.")
	}
	return c.JSON(http.StatusOK, flavorAccessList(f))
}

// flavorAction is POST /flavors/{id}/action: addTenantAccess or
// removeTenantAccess, {"tenant": PROJECT}.
func (s *Server) flavorAction(c echo.Context) error {
	type tenant struct {
		Tenant string `json:"tenant"`
	}
	var body struct {
		Add    *tenant `json:"addTenantAccess"`
		Remove *tenant `json:"removeTenantAccess"`
	}
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	cmd := &fsm.SetFlavorAccess{ID: c.Param("id")}
	switch {
	case body.Add != nil && body.Remove == nil:
		cmd.Project, cmd.Add = body.Add.Tenant, true
	case body.Remove != nil && body.Add == nil:
		cmd.Project = body.Remove.Tenant
	default:
		return badRequest(`the body must be {"addTenantAccess": {"tenant": PROJECT}} or {"removeTenantAccess": {"tenant": PROJECT}}`)
	}
	if cmd.Project == "" {
		return badRequest("tenant is required: the id of the project to give or take access")
	}
	if err := s.readBarrier(c); err != nil {
		return err
	}
	f, err := s.c.Store().Flavor(cmd.ID)
	if err != nil {
		return flavorNotFound(cmd.ID)
	}
	if f.IsPublic {
		return echo.NewHTTPError(http.StatusConflict, "Can not add access to a public flavor.")
	}
	if err := s.propose(c, cmd); err != nil {
		return err
	}
	if f, err = s.c.Store().Flavor(cmd.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, flavorAccessList(f))
}

// checkFlavorAccess refuses a boot with a private flavor the caller's
// project may not use (callers that see every project may use any). A
// flavor this peer does not know yet is left to the leader's Apply.
func checkFlavorAccess(c echo.Context, st *fsm.Store, flavorID string) error {
	if callerOf(c).seesEveryProject() {
		return nil
	}
	if f, err := st.Flavor(flavorID); err == nil && !f.MayUse(callerProject(c)) {
		return badRequest("Invalid flavorRef provided: flavor %s is private and project %s has no access to it", flavorID, callerProject(c))
	}
	return nil
}
