package placement

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	fsmplacement "github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/wire"
)

// Resource providers: corral keeps one per Ironic node and one per
// hypervisor host (fsm/placement); this serves them as Placement does.

// providerView renders a resource provider as Placement does.
func providerView(c echo.Context, p fsmplacement.Provider) map[string]any {
	root := p.RootUUID
	if root == "" {
		root = p.UUID
	}
	var parent any
	if p.ParentUUID != "" {
		parent = p.ParentUUID
	}
	return map[string]any{"uuid": p.UUID, "name": p.Name, "generation": p.Generation,
		"parent_provider_uuid": parent, "root_provider_uuid": root,
		"links": []wire.Link{{Rel: "self", Href: core.BaseURL(c) + wire.PlacementPrefix + "/resource_providers/" + p.UUID}}}
}

// ListProviders is GET /resource_providers.
func (h *Handlers) ListProviders(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := c.QueryParams()
	f := fsmplacement.ProviderFilter{UUID: q.Get("uuid"), Name: q.Get("name"), InTree: q.Get("in_tree")}
	var err error
	if r := q.Get("resources"); r != "" {
		if f.Resources, err = fsmplacement.ParseResources(r); err != nil {
			return httpError(err)
		}
	}
	if r := q.Get("required"); r != "" {
		req, forb, err := fsmplacement.ParseRequired(r)
		if err != nil {
			return httpError(err)
		}
		f.Required = req
		for _, t := range forb {
			f.Required = append(f.Required, "!"+t)
		}
	}
	for _, m := range q["member_of"] {
		aggs, err := fsmplacement.ParseMemberOf(m)
		if err != nil {
			return httpError(err)
		}
		f.MemberOf = append(f.MemberOf, aggs)
	}
	var out []map[string]any
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) {
		var provs []fsmplacement.Provider
		if provs, err = ps.Providers(f); err == nil {
			for _, p := range provs {
				out = append(out, providerView(c, p))
			}
		}
	})
	if err != nil {
		return httpError(err)
	}
	if out == nil {
		out = []map[string]any{}
	}
	return c.JSON(http.StatusOK, map[string]any{"resource_providers": out})
}

// withProvider reads one provider and more under one consistent view.
func (h *Handlers) withProvider(c echo.Context, f func(ps *fsmplacement.Store, p fsmplacement.Provider) (any, error)) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	var body any
	var err error
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) {
		var p fsmplacement.Provider
		if p, err = ps.Provider(c.Param("uuid")); err == nil {
			body, err = f(ps, p)
		}
	})
	if err != nil {
		return httpError(err)
	}
	return c.JSON(http.StatusOK, body)
}

// GetProvider is GET /resource_providers/{uuid}.
func (h *Handlers) GetProvider(c echo.Context) error {
	return h.withProvider(c, func(_ *fsmplacement.Store, p fsmplacement.Provider) (any, error) { return providerView(c, p), nil })
}

// Inventories is GET /resource_providers/{uuid}/inventories.
func (h *Handlers) Inventories(c echo.Context) error {
	return h.withProvider(c, func(_ *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		inv := p.Inventories
		if inv == nil {
			inv = map[string]fsmplacement.Inventory{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "inventories": inv}, nil
	})
}

// Inventory is GET /resource_providers/{uuid}/inventories/{rc}.
func (h *Handlers) Inventory(c echo.Context) error {
	return h.withProvider(c, func(_ *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		inv, ok := p.Inventories[c.Param("rc")]
		if !ok {
			return nil, &Error{Status: http.StatusNotFound, Code: fsmplacement.CodeUndefined,
				Msg: fmt.Sprintf("No inventory of class %s for %s", c.Param("rc"), p.UUID)}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "total": inv.Total, "reserved": inv.Reserved,
			"min_unit": inv.MinUnit, "max_unit": inv.MaxUnit, "step_size": inv.StepSize, "allocation_ratio": inv.AllocationRatio}, nil
	})
}

// Usages is GET /resource_providers/{uuid}/usages.
func (h *Handlers) Usages(c echo.Context) error {
	return h.withProvider(c, func(ps *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		u, err := ps.Usages(p.UUID)
		return map[string]any{"resource_provider_generation": p.Generation, "usages": u}, err
	})
}

// ProviderTraits is GET /resource_providers/{uuid}/traits.
func (h *Handlers) ProviderTraits(c echo.Context) error {
	return h.withProvider(c, func(_ *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		t := p.Traits
		if t == nil {
			t = []string{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "traits": t}, nil
	})
}

// Aggregates is GET /resource_providers/{uuid}/aggregates.
func (h *Handlers) Aggregates(c echo.Context) error {
	return h.withProvider(c, func(_ *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		a := p.Aggregates
		if a == nil {
			a = []string{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "aggregates": a}, nil
	})
}

// ProviderAllocations is GET /resource_providers/{uuid}/allocations.
func (h *Handlers) ProviderAllocations(c echo.Context) error {
	return h.withProvider(c, func(ps *fsmplacement.Store, p fsmplacement.Provider) (any, error) {
		allocs, err := ps.ProviderAllocations(p.UUID)
		out := map[string]any{}
		for consumer, res := range allocs {
			out[consumer] = map[string]any{"resources": res}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "allocations": out}, err
	})
}
