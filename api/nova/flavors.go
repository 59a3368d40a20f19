package nova

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

func flavorLinks(c echo.Context, id string) []wire.Link {
	u := core.BaseURL(c) + wire.ComputePrefix + "/flavors/" + url.PathEscape(id)
	return []wire.Link{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, wire.ComputePrefix, "/compute", 1)}}
}

// flavorView renders a flavor as Nova shows it.
func flavorView(c echo.Context, f fsm.Flavor) wire.Flavor {
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	var desc *string
	if f.Description != "" {
		d := f.Description
		desc = &d
	}
	return wire.Flavor{ID: f.ID, Name: f.Name, RAM: f.RAM, Disk: f.Disk, VCPUs: f.VCPUs, Ephemeral: f.Ephemeral,
		Swap: f.Swap, RxTxFactor: f.RxTxFactor, IsPublic: f.IsPublic, Description: desc, ExtraSpecs: specs,
		Links: flavorLinks(c, f.ID)}
}

// CreateFlavor is POST /flavors.
func (h *Handlers) CreateFlavor(c echo.Context) error {
	var body wire.FlavorCreateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.Flavor
	if in == nil {
		return core.BadRequest(`the body must be {"flavor": {...}}`)
	}
	var missing []string
	if in.Name == nil {
		missing = append(missing, "name")
	}
	if in.RAM == nil {
		missing = append(missing, "ram")
	}
	if in.VCPUs == nil {
		missing = append(missing, "vcpus")
	}
	if in.Disk == nil {
		missing = append(missing, "disk")
	}
	if len(missing) > 0 {
		return core.BadRequest("flavor is missing required field(s): %s", strings.Join(missing, ", "))
	}
	f := fsm.Flavor{Name: *in.Name, RAM: *in.RAM, VCPUs: *in.VCPUs, Disk: *in.Disk, IsPublic: true}
	if in.ID != nil && *in.ID != "" {
		f.ID = *in.ID
	} else {
		f.ID = uuid.NewString()
	}
	if in.Ephemeral != nil {
		f.Ephemeral = *in.Ephemeral
	}
	if in.Swap != nil {
		f.Swap = *in.Swap
	}
	if in.RxTxFactor != nil {
		f.RxTxFactor = *in.RxTxFactor
	}
	if in.IsPublic != nil {
		f.IsPublic = *in.IsPublic
	}
	if in.Description != nil {
		f.Description = *in.Description
	}
	fsm.NormalizeFlavor(&f)
	if err := fsm.ValidateFlavor(f); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.CreateFlavor{Flavor: f}); err != nil {
		return err
	}
	got, err := h.st.Store().Flavor(f.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, got)})
}

// ListFlavors is GET /flavors, or with detail /flavors/detail.
func (h *Handlers) ListFlavors(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := h.st.ReadBarrier(c); err != nil {
			return err
		}
		q := c.QueryParams()
		minRAM, err := intParam(q, "minRam")
		if err != nil {
			return err
		}
		minDisk, err := intParam(q, "minDisk")
		if err != nil {
			return err
		}
		p, err := parsePage(q, limitZeroIsAll)
		if err != nil {
			return err
		}
		public := strings.ToLower(q.Get("is_public"))
		switch public {
		case "", "true", "false", "none", "1", "0", "yes", "no":
		default:
			return core.BadRequest("is_public %q is not one of true, false or none", public)
		}
		out, more, err := pageOf(h.st.Store().Flavors(), p, func(f fsm.Flavor) string { return f.ID }, func(f fsm.Flavor) bool {
			return f.RAM >= minRAM && f.Disk >= minDisk && flavorListed(c, f, public)
		})
		if err != nil {
			return err
		}
		resp := map[string]any{}
		if detail {
			fl := make([]wire.Flavor, 0, len(out))
			for _, f := range out {
				fl = append(fl, flavorView(c, f))
			}
			resp["flavors"] = fl
		} else {
			fl := make([]wire.FlavorBrief, 0, len(out))
			for _, f := range out {
				n := flavorView(c, f)
				fl = append(fl, wire.FlavorBrief{ID: n.ID, Name: n.Name, Description: n.Description, Links: n.Links})
			}
			resp["flavors"] = fl
		}
		if more && len(out) > 0 {
			resp["flavors_links"] = nextLinks(c, out[len(out)-1].ID)
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// intParam reads a non-negative integer query parameter (0 when absent).
func intParam(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, core.BadRequest("%s %q must be a non-negative integer", name, v)
	}
	return n, nil
}

// GetFlavor is GET /flavors/{id}.
func (h *Handlers) GetFlavor(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	f, err := h.st.Store().Flavor(c.Param("id"))
	if err != nil {
		return err
	}
	if !flavorVisible(c, f) {
		return flavorNotFound(f.ID)
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, f)})
}

// DeleteFlavor is DELETE /flavors/{id}.
func (h *Handlers) DeleteFlavor(c echo.Context) error {
	if err := h.st.Propose(c, &fsm.DeleteFlavor{ID: c.Param("id")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}
