package nova

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
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
	var body struct {
		ExtraSpecs map[string]json.RawMessage `json:"extra_specs"`
	}
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if len(body.ExtraSpecs) == 0 {
		return core.BadRequest(`the body must be {"extra_specs": {"key": "value", ...}} with at least one key`)
	}
	specs, err := readExtraSpecs(body.ExtraSpecs)
	if err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: specs}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"extra_specs": specs})
}

// readExtraSpecs reads extra specs as Nova does: keys of its metadata
// pattern, values strings or numbers (kept as their JSON literal), at
// most 255 characters; at most fsm.MaxExtraSpecs of them.
func readExtraSpecs(raw map[string]json.RawMessage) (map[string]string, error) {
	if len(raw) > fsm.MaxExtraSpecs {
		return nil, invalidInput("extra_specs", fmt.Sprintf("%d extra specs", len(raw)),
			fmt.Sprintf("a flavor has at most %d extra specs", fsm.MaxExtraSpecs))
	}
	specs := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v, err := novaStringOrNumber(k, raw[k])
		if err != nil {
			return nil, err
		}
		if err := checkMetadataValue(k, v); err != nil {
			return nil, err
		}
		specs[k] = v
	}
	if err := fsm.ValidateExtraSpecs(specs); err != nil {
		return nil, err
	}
	return specs, nil
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
	var body map[string]json.RawMessage
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	key := c.Param("key")
	if _, ok := body[key]; !ok || len(body) != 1 {
		return core.BadRequest("Request body and URI mismatch: the body must be {%q: \"value\"}", shown(key))
	}
	specs, err := readExtraSpecs(body)
	if err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: specs}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, specs)
}

// DeleteExtraSpec is DELETE /flavors/{id}/os-extra_specs/{key}.
func (h *Handlers) DeleteExtraSpec(c echo.Context) error {
	if err := h.st.Propose(c, &fsm.DeleteFlavorExtraSpec{ID: c.Param("id"), Key: c.Param("key")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}
