package api

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/fsm/placement"
)

const (
	placementPrefix     = "/placement"
	placementMaxVersion = "1.39"
)

// errCorralOwned refuses writes to the providers corral keeps.
var errCorralOwned = errors.New("corral keeps these resource providers itself, from Ironic's nodes and the hypervisor hosts' [hypervisor] configuration: change the node in Ironic (or the host's configuration) instead")

func (s *Server) placementVersionMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ver := "1.0"
		if v := c.Request().Header.Get("OpenStack-API-Version"); v != "" {
			svc, want, _ := strings.Cut(strings.TrimSpace(v), " ")
			if strings.EqualFold(svc, "placement") {
				switch want = strings.TrimSpace(want); {
				case want == "latest":
					ver = placementMaxVersion
				default:
					mv, err := parseMicroversion(want)
					maxV, _ := parseMicroversion(placementMaxVersion)
					if err != nil || mv.major != 1 || maxV.less(mv) {
						return echo.NewHTTPError(http.StatusNotAcceptable, fmt.Sprintf("Unacceptable version header: %s (this Placement serves 1.0 to %s)", want, placementMaxVersion))
					}
					ver = mv.String()
				}
			}
		}
		c.Response().Header().Set("OpenStack-API-Version", "placement "+ver)
		c.Response().Header().Add("Vary", "OpenStack-API-Version")
		return next(c)
	}
}

func (s *Server) placementRoot(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"versions": []map[string]any{{
		"id": "v1.0", "min_version": "1.0", "max_version": placementMaxVersion, "status": "CURRENT",
		"links": []link{{Rel: "self", Href: baseURL(c) + placementPrefix + "/"}},
	}}})
}

func providerView(c echo.Context, p placement.Provider) map[string]any {
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
		"links": []link{{Rel: "self", Href: baseURL(c) + placementPrefix + "/resource_providers/" + p.UUID}}}
}

// placementError keeps Placement's status and error code.
type placementError struct {
	status int
	code   string
	msg    string
}

func (e *placementError) Error() string { return e.msg }

// placementHTTP maps the placement package's errors to HTTP.
func placementHTTP(err error) error {
	if err == nil {
		return nil
	}
	return &placementError{status: placement.HTTPStatus(err), code: placement.ErrorCode(err), msg: err.Error()}
}

func (s *Server) listProviders(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	q := c.QueryParams()
	f := placement.ProviderFilter{UUID: q.Get("uuid"), Name: q.Get("name"), InTree: q.Get("in_tree")}
	var err error
	if r := q.Get("resources"); r != "" {
		if f.Resources, err = placement.ParseResources(r); err != nil {
			return placementHTTP(err)
		}
	}
	if r := q.Get("required"); r != "" {
		req, forb, err := placement.ParseRequired(r)
		if err != nil {
			return placementHTTP(err)
		}
		f.Required = req
		for _, t := range forb {
			f.Required = append(f.Required, "!"+t)
		}
	}
	for _, m := range q["member_of"] {
		aggs, err := placement.ParseMemberOf(m)
		if err != nil {
			return placementHTTP(err)
		}
		f.MemberOf = append(f.MemberOf, aggs)
	}
	var out []map[string]any
	s.c.Store().PlacementRead(func(ps *placement.Store) {
		var provs []placement.Provider
		if provs, err = ps.Providers(f); err == nil {
			for _, p := range provs {
				out = append(out, providerView(c, p))
			}
		}
	})
	if err != nil {
		return placementHTTP(err)
	}
	if out == nil {
		out = []map[string]any{}
	}
	return c.JSON(http.StatusOK, map[string]any{"resource_providers": out})
}

// withProvider reads one provider and more under one consistent view.
func (s *Server) withProvider(c echo.Context, f func(ps *placement.Store, p placement.Provider) (any, error)) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	var body any
	var err error
	s.c.Store().PlacementRead(func(ps *placement.Store) {
		var p placement.Provider
		if p, err = ps.Provider(c.Param("uuid")); err == nil {
			body, err = f(ps, p)
		}
	})
	if err != nil {
		return placementHTTP(err)
	}
	return c.JSON(http.StatusOK, body)
}

func (s *Server) getProvider(c echo.Context) error {
	return s.withProvider(c, func(_ *placement.Store, p placement.Provider) (any, error) { return providerView(c, p), nil })
}

func (s *Server) providerInventories(c echo.Context) error {
	return s.withProvider(c, func(_ *placement.Store, p placement.Provider) (any, error) {
		inv := p.Inventories
		if inv == nil {
			inv = map[string]placement.Inventory{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "inventories": inv}, nil
	})
}

func (s *Server) providerInventory(c echo.Context) error {
	return s.withProvider(c, func(_ *placement.Store, p placement.Provider) (any, error) {
		inv, ok := p.Inventories[c.Param("rc")]
		if !ok {
			return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No inventory of class %s found for resource provider %s.", c.Param("rc"), p.UUID))
		}
		return map[string]any{"resource_provider_generation": p.Generation, "total": inv.Total, "reserved": inv.Reserved,
			"min_unit": inv.MinUnit, "max_unit": inv.MaxUnit, "step_size": inv.StepSize, "allocation_ratio": inv.AllocationRatio}, nil
	})
}

func (s *Server) providerUsages(c echo.Context) error {
	return s.withProvider(c, func(ps *placement.Store, p placement.Provider) (any, error) {
		u, err := ps.Usages(p.UUID)
		return map[string]any{"resource_provider_generation": p.Generation, "usages": u}, err
	})
}

func (s *Server) providerTraits(c echo.Context) error {
	return s.withProvider(c, func(_ *placement.Store, p placement.Provider) (any, error) {
		t := p.Traits
		if t == nil {
			t = []string{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "traits": t}, nil
	})
}

func (s *Server) providerAggregates(c echo.Context) error {
	return s.withProvider(c, func(_ *placement.Store, p placement.Provider) (any, error) {
		a := p.Aggregates
		if a == nil {
			a = []string{}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "aggregates": a}, nil
	})
}

func (s *Server) providerAllocations(c echo.Context) error {
	return s.withProvider(c, func(ps *placement.Store, p placement.Provider) (any, error) {
		allocs, err := ps.ProviderAllocations(p.UUID)
		out := map[string]any{}
		for consumer, res := range allocs {
			out[consumer] = map[string]any{"resources": res}
		}
		return map[string]any{"resource_provider_generation": p.Generation, "allocations": out}, err
	})
}

func (s *Server) consumerAllocations(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	body := map[string]any{"allocations": map[string]any{}}
	s.c.Store().PlacementRead(func(ps *placement.Store) {
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

func (s *Server) allocationCandidates(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	q := c.QueryParams()
	res, err := placement.ParseResources(q.Get("resources"))
	if err != nil {
		return placementHTTP(err)
	}
	cq := placement.CandidateQuery{Resources: res}
	if r := q.Get("required"); r != "" {
		req, forb, err := placement.ParseRequired(r)
		if err != nil {
			return placementHTTP(err)
		}
		cq.Required = req
		for _, t := range forb {
			cq.Required = append(cq.Required, "!"+t)
		}
	}
	for _, m := range q["member_of"] {
		aggs, err := placement.ParseMemberOf(m)
		if err != nil {
			return placementHTTP(err)
		}
		cq.MemberOf = append(cq.MemberOf, aggs)
	}
	if l := q.Get("limit"); l != "" {
		if cq.Limit, err = strconv.Atoi(l); err != nil || cq.Limit < 1 {
			return echo.NewHTTPError(http.StatusBadRequest, "limit must be a positive integer")
		}
	}
	var cands []placement.Candidate
	s.c.Store().PlacementRead(func(ps *placement.Store) { cands, err = ps.Candidates(cq) })
	if err != nil {
		return placementHTTP(err)
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

func (s *Server) projectUsages(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	project := c.QueryParam("project_id")
	if project == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "project_id is required")
	}
	var u map[string]int64
	s.c.Store().PlacementRead(func(ps *placement.Store) { u = ps.ProjectUsages(project) })
	return c.JSON(http.StatusOK, map[string]any{"usages": u})
}

func (s *Server) placementTraits(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	set := map[string]bool{}
	var err error
	s.c.Store().PlacementRead(func(ps *placement.Store) {
		var provs []placement.Provider
		if provs, err = ps.Providers(placement.ProviderFilter{}); err == nil {
			for _, p := range provs {
				for _, t := range p.Traits {
					set[t] = true
				}
			}
		}
	})
	if err != nil {
		return placementHTTP(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"traits": sortedSet(set)})
}

func (s *Server) resourceClasses(c echo.Context) error {
	if err := s.readBarrier(c); err != nil {
		return err
	}
	set := map[string]bool{}
	for _, rc := range placement.StandardResourceClasses() {
		set[rc] = true
	}
	var err error
	s.c.Store().PlacementRead(func(ps *placement.Store) {
		var provs []placement.Provider
		if provs, err = ps.Providers(placement.ProviderFilter{}); err == nil {
			for _, p := range provs {
				for rc := range p.Inventories {
					set[rc] = true
				}
			}
		}
	})
	if err != nil {
		return placementHTTP(err)
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
