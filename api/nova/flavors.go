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

// The views of a flavor.
const (
	flavorShow  view = 1 << iota // GET /flavors/{id}, an entry of /flavors/detail, and the answers that show a flavor
	flavorBrief                  // an entry of GET /flavors
)

type flavorItem struct {
	c echo.Context
	f fsm.Flavor
}

// flavorTable is Nova's flavor view (nova/api/openstack/compute/views/
// flavors.py).
var flavorTable = &table[flavorItem]{
	resource: "flavor",
	views:    []string{"show", "brief"},
	fields: []field[flavorItem]{
		{name: "id", in: flavorShow | flavorBrief, value: func(i flavorItem) any { return i.f.ID }},
		{name: "name", in: flavorShow | flavorBrief, value: func(i flavorItem) any { return i.f.Name }},
		{name: "links", in: flavorShow | flavorBrief, value: func(i flavorItem) any { return flavorLinks(i.c, i.f.ID) }},
		{name: "description", since: v2(55), in: flavorShow | flavorBrief, value: func(i flavorItem) any { return nullable(i.f.Description) }},
		{name: "ram", in: flavorShow, value: func(i flavorItem) any { return i.f.RAM }},
		{name: "disk", in: flavorShow, value: func(i flavorItem) any { return i.f.Disk }},
		{name: "vcpus", in: flavorShow, value: func(i flavorItem) any { return i.f.VCPUs }},
		// Nova shows no swap as "" until 2.75, as 0 from it.
		{name: "swap", until: v2(74), in: flavorShow, value: func(i flavorItem) any {
			if i.f.Swap == 0 {
				return ""
			}
			return i.f.Swap
		}},
		{name: "swap", since: v2(75), in: flavorShow, value: func(i flavorItem) any { return i.f.Swap }},
		{name: "OS-FLV-EXT-DATA:ephemeral", in: flavorShow, value: func(i flavorItem) any { return i.f.Ephemeral }},
		{name: "OS-FLV-DISABLED:disabled", in: flavorShow, value: func(flavorItem) any { return false }},
		{name: "os-flavor-access:is_public", in: flavorShow, value: func(i flavorItem) any { return i.f.IsPublic }},
		{name: "rxtx_factor", in: flavorShow, value: func(i flavorItem) any { return i.f.RxTxFactor }},
		{name: "extra_specs", since: v2(61), in: flavorShow, value: func(i flavorItem) any { return orEmpty(i.f.ExtraSpecs) }},
	},
}

// flavorView renders a flavor in one of its views.
func flavorView(c echo.Context, in view, f fsm.Flavor) map[string]any {
	return flavorTable.render(c, in, flavorItem{c: c, f: f})
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
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, flavorShow, got)})
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
		in := flavorBrief
		if detail {
			in = flavorShow
		}
		fl := make([]map[string]any, 0, len(out))
		for _, f := range out {
			fl = append(fl, flavorView(c, in, f))
		}
		resp := map[string]any{"flavors": fl}
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
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, flavorShow, f)})
}

// DeleteFlavor is DELETE /flavors/{id}.
func (h *Handlers) DeleteFlavor(c echo.Context) error {
	if err := h.st.Propose(c, &fsm.DeleteFlavor{ID: c.Param("id")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}
