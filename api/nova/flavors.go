package nova

import (
	"fmt"
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

// CreateFlavor is POST /flavors, read as Nova's schema reads it.
func (h *Handlers) CreateFlavor(c echo.Context) error {
	var body flavorCreateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.Flavor
	if in == nil {
		return core.BadRequest(`the body must be {"flavor": {...}}`)
	}
	var missing []string
	for _, f := range []struct {
		name    string
		present bool
	}{{"name", in.Name != nil}, {"ram", len(in.RAM) > 0}, {"vcpus", len(in.VCPUs) > 0}, {"disk", len(in.Disk) > 0}} {
		if !f.present {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return core.BadRequest("flavor is missing required field(s): %s", strings.Join(missing, ", "))
	}
	f, err := readFlavor(in)
	if err != nil {
		return err
	}
	fsm.NormalizeFlavor(&f)
	if err := fsm.ValidateFlavor(f); err != nil {
		return err
	}
	if err := h.st.Propose(c, &fsm.CreateFlavor{Flavor: f}); err != nil {
		return err
	}
	// The flavor as Apply keeps it (f is normalized and valid): this
	// peer's replica may not have applied it yet.
	return c.JSON(http.StatusOK, map[string]any{"flavor": flavorView(c, flavorShow, f)})
}

// readFlavor reads a new flavor's fields as Nova does: sizes as integers
// or strings of digits, is_public as a boolean or one of its words, the
// id as a string of Nova's characters or a number (none: a new UUID).
func readFlavor(in *flavorCreate) (fsm.Flavor, error) {
	f := fsm.Flavor{Name: *in.Name, IsPublic: true}
	if err := checkName("name", f.Name); err != nil {
		return f, err
	}
	f.ID = uuid.NewString()
	if !isNull(in.ID) {
		id, err := novaStringOrNumber("id", in.ID)
		if err != nil {
			return f, err
		}
		if _, isString := jsonString(in.ID); isString {
			if err := checkFlavorID(id); err != nil {
				return f, err
			}
		}
		f.ID = id
	}
	sizes := []struct {
		field string
		raw   []byte
		min   int64
		into  *int
	}{
		{"ram", in.RAM, 1, &f.RAM}, {"vcpus", in.VCPUs, 1, &f.VCPUs}, {"disk", in.Disk, 0, &f.Disk},
		{"OS-FLV-EXT-DATA:ephemeral", in.Ephemeral, 0, &f.Ephemeral}, {"swap", in.Swap, 0, &f.Swap},
	}
	for _, sz := range sizes {
		if len(sz.raw) == 0 {
			continue
		}
		n, err := novaInteger(sz.field, sz.raw, sz.min, fsm.MaxFlavorSize)
		if err != nil {
			return f, err
		}
		*sz.into = int(n)
	}
	if len(in.RxTxFactor) > 0 {
		v, err := novaRxTxFactor(in.RxTxFactor)
		if err != nil {
			return f, err
		}
		f.RxTxFactor = v
	}
	if len(in.IsPublic) > 0 {
		v, err := novaBoolean("os-flavor-access:is_public", in.IsPublic)
		if err != nil {
			return f, err
		}
		f.IsPublic = v
	}
	if in.Description != nil {
		if err := checkDescription("description", *in.Description, fsm.MaxFlavorDescriptionLen); err != nil {
			return f, err
		}
		f.Description = *in.Description
	}
	return f, nil
}

// flavorIDPattern is Nova's pattern of a flavor id given as a string.
const flavorIDPattern = "^(?! )[a-zA-Z0-9. _-]+(?<! )$"

// checkFlavorID holds a flavor id given as a string to Nova's schema: 1
// to 255 letters, digits, '.', ' ', '_' and '-', not starting or ending
// with a space.
func checkFlavorID(id string) error {
	if id == "" {
		return invalidInput("id", id, "'' is too short")
	}
	if len(id) > fsm.MaxFlavorIDLen {
		return invalidInput("id", id, fmt.Sprintf("'%s' is too long", shown(id)))
	}
	ok := id[0] != ' ' && id[len(id)-1] != ' '
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == ' ' || c == '_' || c == '-'
	}
	if !ok {
		return invalidInput("id", id, fmt.Sprintf("'%s' does not match '%s'", shown(id), flavorIDPattern))
	}
	return nil
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
		public, err := parseIsPublic(c, q)
		if err != nil {
			return err
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
