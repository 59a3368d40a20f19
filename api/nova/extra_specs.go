package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// A flavor's extra specs (os-extra_specs): the scheduler reads them
// (resources:, trait:, capabilities:), Ironic's deploy images too.

// ListExtraSpecs is GET /flavors/{id}/os-extra_specs.
func (h *Handlers) ListExtraSpecs(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	f, err := h.st.Store().Flavor(c.Param("id"))
	if err != nil {
		return err
	}
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	return c.JSON(http.StatusOK, map[string]any{"extra_specs": specs})
}

// CreateExtraSpecs is POST /flavors/{id}/os-extra_specs: it merges the
// given specs into the flavor's.
func (h *Handlers) CreateExtraSpecs(c echo.Context) error {
	var body wire.ExtraSpecsBody
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if len(body.ExtraSpecs) == 0 {
		return core.BadRequest(`the body must be {"extra_specs": {"key": "value", ...}} with at least one key`)
	}
	if err := fsm.ValidateExtraSpecs(body.ExtraSpecs); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: body.ExtraSpecs}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"extra_specs": body.ExtraSpecs})
}

// GetExtraSpec is GET /flavors/{id}/os-extra_specs/{key}.
func (h *Handlers) GetExtraSpec(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	f, err := h.st.Store().Flavor(c.Param("id"))
	if err != nil {
		return err
	}
	key := c.Param("key")
	v, ok := f.ExtraSpecs[key]
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "Flavor "+f.ID+" has no extra specs with key "+key+".")
	}
	return c.JSON(http.StatusOK, map[string]string{key: v})
}

// UpdateExtraSpec is PUT /flavors/{id}/os-extra_specs/{key}.
func (h *Handlers) UpdateExtraSpec(c echo.Context) error {
	var body map[string]string
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	key := c.Param("key")
	v, ok := body[key]
	if !ok || len(body) != 1 {
		return core.BadRequest("Request body and URI mismatch: the body must be {%q: \"value\"}", key)
	}
	if err := fsm.ValidateExtraSpecs(body); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: body}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{key: v})
}

// DeleteExtraSpec is DELETE /flavors/{id}/os-extra_specs/{key}.
func (h *Handlers) DeleteExtraSpec(c echo.Context) error {
	if err := h.st.Propose(c, &fsm.DeleteFlavorExtraSpec{ID: c.Param("id"), Key: c.Param("key")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}
