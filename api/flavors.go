package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm"
)

// novaFlavor is a flavor as Nova's API shows it.
type novaFlavor struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	RAM         int               `json:"ram"`
	Disk        int               `json:"disk"`
	VCPUs       int               `json:"vcpus"`
	Ephemeral   int               `json:"OS-FLV-EXT-DATA:ephemeral"`
	Swap        int               `json:"swap"`
	RxTxFactor  float64           `json:"rxtx_factor"`
	IsPublic    bool              `json:"os-flavor-access:is_public"`
	Disabled    bool              `json:"OS-FLV-DISABLED:disabled"`
	Description *string           `json:"description"`
	ExtraSpecs  map[string]string `json:"extra_specs"`
	Links       []link            `json:"links"`
}

type novaFlavorBrief struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	Links       []link  `json:"links"`
}

func flavorLinks(c echo.Context, id string) []link {
	u := baseURL(c) + novaPrefix + "/flavors/" + url.PathEscape(id)
	return []link{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, novaPrefix, "/compute", 1)}}
}

func toNova(c echo.Context, f fsm.Flavor) novaFlavor {
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	var desc *string
	if f.Description != "" {
		d := f.Description
		desc = &d
	}
	return novaFlavor{ID: f.ID, Name: f.Name, RAM: f.RAM, Disk: f.Disk, VCPUs: f.VCPUs, Ephemeral: f.Ephemeral,
		Swap: f.Swap, RxTxFactor: f.RxTxFactor, IsPublic: f.IsPublic, Description: desc, ExtraSpecs: specs,
		Links: flavorLinks(c, f.ID)}
}

// flavorCreateBody is Nova's POST /flavors body.
type flavorCreateBody struct {
	Flavor *struct {
		Name        *string  `json:"name"`
		ID          *string  `json:"id"`
		RAM         *int     `json:"ram"`
		VCPUs       *int     `json:"vcpus"`
		Disk        *int     `json:"disk"`
		Ephemeral   *int     `json:"OS-FLV-EXT-DATA:ephemeral"`
		Swap        *int     `json:"swap"`
		RxTxFactor  *float64 `json:"rxtx_factor"`
		IsPublic    *bool    `json:"os-flavor-access:is_public"`
		Description *string  `json:"description"`
	} `json:"flavor"`
}

func (s *Server) createFlavor(c echo.Context) error {
	var body flavorCreateBody
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	in := body.Flavor
	if in == nil {
		return badRequest(`the body must be {"flavor": {...}}`)
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
		return badRequest("flavor is missing required field(s): %s", strings.Join(missing, ", "))
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
	if err := s.propose(c, &fsm.CreateFlavor{Flavor: f}); err != nil {
		return err
	}
	got, err := s.c.Store().Flavor(f.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": toNova(c, got)})
}

func (s *Server) listFlavors(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.readBarrier(c); err != nil {
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
		limit, err := intParam(q, "limit")
		if err != nil {
			return err
		}
		public := strings.ToLower(q.Get("is_public"))
		switch public {
		case "", "true", "false", "none", "1", "0", "yes", "no":
		default:
			return badRequest("is_public %q is not one of true, false or none", public)
		}
		all := s.c.Store().Flavors()
		start := 0
		if m := q.Get("marker"); m != "" {
			start = -1
			for i, f := range all {
				if f.ID == m {
					start = i + 1
				}
			}
			if start < 0 {
				return badRequest("marker [%s] not found", m)
			}
		}
		var out []fsm.Flavor
		more := false
		for _, f := range all[start:] {
			if f.RAM < minRAM || f.Disk < minDisk {
				continue
			}
			if !flavorListed(c, f, public) {
				continue
			}
			if limit > 0 && len(out) == limit {
				more = true
				break
			}
			out = append(out, f)
		}
		resp := map[string]any{}
		if detail {
			fl := make([]novaFlavor, 0, len(out))
			for _, f := range out {
				fl = append(fl, toNova(c, f))
			}
			resp["flavors"] = fl
		} else {
			fl := make([]novaFlavorBrief, 0, len(out))
			for _, f := range out {
				n := toNova(c, f)
				fl = append(fl, novaFlavorBrief{ID: n.ID, Name: n.Name, Description: n.Description, Links: n.Links})
			}
			resp["flavors"] = fl
		}
		if more {
			nq := url.Values{}
			for k, v := range q {
				nq[k] = v
			}
			nq.Set("marker", out[len(out)-1].ID)
			path := c.Request().URL.Path
			resp["flavors_links"] = []link{{Rel: "next", Href: baseURL(c) + path + "?" + nq.Encode()}}
		}
		return c.JSON(http.StatusOK, resp)
	}
}

func intParam(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest("%s %q must be a non-negative integer", name, v)
	}
	return n, nil
}

func (s *Server) getFlavor(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	f, err := s.c.Store().Flavor(c.Param("id"))
	if err != nil {
		return err
	}
	if !flavorVisible(c, f) {
		return flavorNotFound(f.ID)
	}
	return c.JSON(http.StatusOK, map[string]any{"flavor": toNova(c, f)})
}

func (s *Server) deleteFlavor(c echo.Context) error {
	if err := s.propose(c, &fsm.DeleteFlavor{ID: c.Param("id")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

func (s *Server) listExtraSpecs(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	f, err := s.c.Store().Flavor(c.Param("id"))
	if err != nil {
		return err
	}
	specs := f.ExtraSpecs
	if specs == nil {
		specs = map[string]string{}
	}
	return c.JSON(http.StatusOK, map[string]any{"extra_specs": specs})
}

func (s *Server) createExtraSpecs(c echo.Context) error {
	var body struct {
		ExtraSpecs map[string]string `json:"extra_specs"`
	}
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	if len(body.ExtraSpecs) == 0 {
		return badRequest(`the body must be {"extra_specs": {"key": "value", ...}} with at least one key`)
	}
	if err := fsm.ValidateExtraSpecs(body.ExtraSpecs); err != nil {
		return err
	}
	if err := s.propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: body.ExtraSpecs}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"extra_specs": body.ExtraSpecs})
}

func (s *Server) getExtraSpec(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	f, err := s.c.Store().Flavor(c.Param("id"))
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

func (s *Server) updateExtraSpec(c echo.Context) error {
	var body map[string]string
	if err := bindStrict(c, &body); err != nil {
		return err
	}
	key := c.Param("key")
	v, ok := body[key]
	if !ok || len(body) != 1 {
		return badRequest("Request body and URI mismatch: the body must be {%q: \"value\"}", key)
	}
	if err := fsm.ValidateExtraSpecs(body); err != nil {
		return err
	}
	if err := s.propose(c, &fsm.SetFlavorExtraSpecs{ID: c.Param("id"), Specs: body}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{key: v})
}

func (s *Server) deleteExtraSpec(c echo.Context) error {
	if err := s.propose(c, &fsm.DeleteFlavorExtraSpec{ID: c.Param("id"), Key: c.Param("key")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}
