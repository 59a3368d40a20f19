package placement

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/labstack/echo/v4"

	fsmplacement "github.com/corral-dev/corral/fsm/placement"
)

// Allocations, candidates, usages, traits and resource classes across
// every provider.

// ConsumerAllocations is GET /allocations/{consumer}.
func (h *Handlers) ConsumerAllocations(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	body := map[string]any{"allocations": map[string]any{}}
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) {
		ca, ok := ps.Allocations(c.Param("consumer"))
		if !ok {
			return
		}
		out := map[string]any{}
		for rp, res := range ca.Allocations {
			gen := uint64(0)
			if p, err := ps.Provider(rp); err == nil {
				gen = p.Generation
			}
			out[rp] = map[string]any{"generation": gen, "resources": res}
		}
		body = map[string]any{"allocations": out, "consumer_generation": ca.ConsumerGeneration,
			"project_id": ca.ProjectID, "user_id": ca.UserID}
	})
	return c.JSON(http.StatusOK, body)
}

// AllocationCandidates is GET /allocation_candidates.
func (h *Handlers) AllocationCandidates(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	q := c.QueryParams()
	res, err := fsmplacement.ParseResources(q.Get("resources"))
	if err != nil {
		return httpError(err)
	}
	cq := fsmplacement.CandidateQuery{Resources: res}
	if r := q.Get("required"); r != "" {
		req, forb, err := fsmplacement.ParseRequired(r)
		if err != nil {
			return httpError(err)
		}
		cq.Required = req
		for _, t := range forb {
			cq.Required = append(cq.Required, "!"+t)
		}
	}
	for _, m := range q["member_of"] {
		aggs, err := fsmplacement.ParseMemberOf(m)
		if err != nil {
			return httpError(err)
		}
		cq.MemberOf = append(cq.MemberOf, aggs)
	}
	if l := q.Get("limit"); l != "" {
		if cq.Limit, err = strconv.Atoi(l); err != nil || cq.Limit < 1 {
			return echo.NewHTTPError(http.StatusBadRequest, "limit must be a positive integer")
		}
	}
	var cands []fsmplacement.Candidate
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) { cands, err = ps.Candidates(cq) })
	if err != nil {
		return httpError(err)
	}
	reqs := make([]map[string]any, 0, len(cands))
	summaries := map[string]any{}
	for _, cand := range cands {
		allocs := map[string]any{}
		for rp, r := range cand.Allocations {
			allocs[rp] = map[string]any{"resources": r}
		}
		reqs = append(reqs, map[string]any{"allocations": allocs})
		for _, sum := range cand.Summaries {
			summaries[sum.UUID] = map[string]any{"resources": sum.Resources, "traits": sum.Traits,
				"parent_provider_uuid": sum.ParentUUID, "root_provider_uuid": sum.RootUUID}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"allocation_requests": reqs, "provider_summaries": summaries})
}

// ProjectUsages is GET /usages?project_id=.
func (h *Handlers) ProjectUsages(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	project := c.QueryParam("project_id")
	if project == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "project_id is required")
	}
	var u map[string]int64
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) { u = ps.ProjectUsages(project) })
	return c.JSON(http.StatusOK, map[string]any{"usages": u})
}

// Traits is GET /traits: every trait a provider has.
func (h *Handlers) Traits(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	set := map[string]bool{}
	var err error
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) {
		var provs []fsmplacement.Provider
		if provs, err = ps.Providers(fsmplacement.ProviderFilter{}); err == nil {
			for _, p := range provs {
				for _, t := range p.Traits {
					set[t] = true
				}
			}
		}
	})
	if err != nil {
		return httpError(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"traits": sortedSet(set)})
}

// ResourceClasses is GET /resource_classes: the standard classes and every class a provider has.
func (h *Handlers) ResourceClasses(c echo.Context) error {
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	set := map[string]bool{}
	for _, rc := range fsmplacement.StandardResourceClasses() {
		set[rc] = true
	}
	var err error
	h.st.Store().PlacementRead(func(ps *fsmplacement.Store) {
		var provs []fsmplacement.Provider
		if provs, err = ps.Providers(fsmplacement.ProviderFilter{}); err == nil {
			for _, p := range provs {
				for rc := range p.Inventories {
					set[rc] = true
				}
			}
		}
	})
	if err != nil {
		return httpError(err)
	}
	var out []map[string]string
	for _, rc := range sortedSet(set) {
		out = append(out, map[string]string{"name": rc})
	}
	return c.JSON(http.StatusOK, map[string]any{"resource_classes": out})
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
