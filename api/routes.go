package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-dev/corral/cluster/forward"
)

// rolePublic marks the routes that need no token at all.
const rolePublic Role = "public"

// route is one line of the route table: who may call what.
type route struct {
	method  string
	path    string
	handler echo.HandlerFunc
	role    Role // rolePublic, RoleReader or RoleAdmin
}

// routeTable is every route the API serves. Paths under novaPrefix and
// placementPrefix negotiate their microversions (see mount).
func (s *Server) routeTable() []route {
	const get, post, put, del, patch = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch
	metrics := echo.WrapHandler(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	internal := echo.WrapHandler(forward.NewHandler(s.c))
	const nova, pl = novaPrefix, placementPrefix
	bm := BaremetalProxy{Source: s.cfg.BaremetalNodes}
	refuse := func(echo.Context) error { return echo.NewHTTPError(http.StatusForbidden, errCorralOwned.Error()) }
	return []route{
		// Health, readiness and metrics (cluster.go, metrics.go).
		{get, "/healthz", s.healthz, rolePublic},
		{get, "/readyz", s.readyz, rolePublic},
		{get, "/metrics", metrics, rolePublic},

		// Native admin API: the cluster and its hosts (cluster.go, ironic.go, networks.go, ownership.go, migration.go).
		{get, "/v1/cluster/members", s.members, RoleReader},
		{get, "/v1/cluster/raft", s.raftStatus, RoleReader},
		{post, "/v1/agent/leave", s.leave, RoleAdmin},
		{get, "/v1/hosts", s.listHosts, RoleReader},
		{get, "/v1/hosts/:name", s.getHost, RoleReader},
		{post, "/v1/hosts/:name/drain", s.drainHost(true), RoleAdmin},
		{post, "/v1/hosts/:name/undrain", s.drainHost(false), RoleAdmin},
		{post, "/v1/hosts/:name/force-down", s.forceDown, RoleAdmin},
		{get, "/v1/nodes", s.listNodes, RoleReader},
		{get, "/v1/reservations", s.listReservations, RoleReader},
		{get, "/v1/networks", s.listNetworks, RoleReader},
		{post, "/v1/servers/:id/move", s.moveServer, RoleAdmin},
		{get, "/v1/servers/:id/owner", s.serverOwner, RoleReader},
		{get, "/v1/plan/rebalance", s.planRebalance, RoleReader},
		{post, "/v1/manage/ironic-flavor-migration", s.flavorMigration, RoleAdmin},

		// Peers forwarding to the leader (cluster/forward); peers use an admin token.
		{post, forward.ApplyPath, internal, RoleAdmin},
		{get, forward.ReadIndexPath, internal, RoleAdmin},

		// Compute, a Nova subset (nova.go, flavors.go, servers.go).
		{get, nova, s.novaVersion, RoleReader},
		{get, nova + "/", s.novaVersion, RoleReader},
		{get, nova + "/flavors", s.listFlavors(false), RoleReader},
		{get, nova + "/flavors/detail", s.listFlavors(true), RoleReader},
		{post, nova + "/flavors", s.createFlavor, RoleAdmin},
		{get, nova + "/flavors/:id", s.getFlavor, RoleReader},
		{del, nova + "/flavors/:id", s.deleteFlavor, RoleAdmin},
		{get, nova + "/flavors/:id/os-extra_specs", s.listExtraSpecs, RoleReader},
		{post, nova + "/flavors/:id/os-extra_specs", s.createExtraSpecs, RoleAdmin},
		{get, nova + "/flavors/:id/os-extra_specs/:key", s.getExtraSpec, RoleReader},
		{put, nova + "/flavors/:id/os-extra_specs/:key", s.updateExtraSpec, RoleAdmin},
		{del, nova + "/flavors/:id/os-extra_specs/:key", s.deleteExtraSpec, RoleAdmin},
		{post, nova + "/servers", s.createServer, RoleAdmin},
		{get, nova + "/servers", s.listServers(false), RoleReader},
		{get, nova + "/servers/detail", s.listServers(true), RoleReader},
		{get, nova + "/servers/:id", s.getServer, RoleReader},
		{del, nova + "/servers/:id", s.deleteServer, RoleAdmin},

		// Placement, read only: corral keeps the providers itself (placement.go).
		{get, pl, s.placementRoot, RoleReader},
		{get, pl + "/", s.placementRoot, RoleReader},
		{get, pl + "/resource_providers", s.listProviders, RoleReader},
		{get, pl + "/resource_providers/:uuid", s.getProvider, RoleReader},
		{get, pl + "/resource_providers/:uuid/inventories", s.providerInventories, RoleReader},
		{get, pl + "/resource_providers/:uuid/inventories/:rc", s.providerInventory, RoleReader},
		{get, pl + "/resource_providers/:uuid/usages", s.providerUsages, RoleReader},
		{get, pl + "/resource_providers/:uuid/traits", s.providerTraits, RoleReader},
		{get, pl + "/resource_providers/:uuid/aggregates", s.providerAggregates, RoleReader},
		{get, pl + "/resource_providers/:uuid/allocations", s.providerAllocations, RoleReader},
		{get, pl + "/allocations/:consumer", s.consumerAllocations, RoleReader},
		{get, pl + "/allocation_candidates", s.allocationCandidates, RoleReader},
		{get, pl + "/usages", s.projectUsages, RoleReader},
		{get, pl + "/traits", s.placementTraits, RoleReader},
		{get, pl + "/resource_classes", s.resourceClasses, RoleReader},
		{post, pl + "/*", refuse, RoleAdmin},
		{put, pl + "/*", refuse, RoleAdmin},
		{del, pl + "/*", refuse, RoleAdmin},
		{patch, pl + "/*", refuse, RoleAdmin},

		// Upgrade from Nova's baremetal driver (adopt.go).
		{post, AdoptServerPath, s.adoptServer, RoleAdmin},

		// Nova's baremetal extension, a read-only proxy to Ironic (baremetal_nodes.go).
		{get, nova + "/os-baremetal-nodes", bm.List, RoleAdmin},
		{get, nova + "/os-baremetal-nodes/:id", bm.Show, RoleAdmin},
		{post, nova + "/os-baremetal-nodes", bm.NotSupported, RoleAdmin},
		{del, nova + "/os-baremetal-nodes/:id", bm.NotSupported, RoleAdmin},
		{post, nova + "/os-baremetal-nodes/:id/action", bm.NotSupported, RoleAdmin},
	}
}

// mount registers the route table. Compute and placement routes go into
// echo groups whose middleware negotiates the microversion, also for the
// group's unknown paths.
func (s *Server) mount() {
	groups := []struct {
		prefix string
		g      *echo.Group
	}{
		{novaPrefix, s.e.Group(novaPrefix, s.novaVersionMiddleware)},
		{placementPrefix, s.e.Group(placementPrefix, s.placementVersionMiddleware)},
	}
	s.roles = map[string]Role{}
	for _, r := range s.routeTable() {
		s.roles[r.method+" "+r.path] = r.role
		add, path := s.e.Add, r.path
		for _, g := range groups {
			if rest, ok := strings.CutPrefix(r.path, g.prefix); ok {
				add, path = g.g.Add, rest
				break
			}
		}
		add(r.method, path, r.handler)
	}
}

// authMiddleware authenticates the token and checks it against the role
// the route table requires. A request that matches no route (404, 405)
// needs a valid token, and an admin one for anything but GET and HEAD.
func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		m := c.Request().Method
		need, known := s.roles[m+" "+c.Path()]
		if !known {
			need = RoleReader
			if m != http.MethodGet && m != http.MethodHead {
				need = RoleAdmin
			}
		}
		if need == rolePublic {
			return next(c)
		}
		tok := c.Request().Header.Get("X-Auth-Token")
		if tok == "" {
			if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
				tok = strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
			}
		}
		if tok == "" {
			return ErrUnauthorized
		}
		role, ok := s.lookupToken(tok)
		if !ok {
			return fmt.Errorf("%w: the token is not known to this cluster; check CORRAL_TOKEN against [auth] in the agents' configuration", ErrUnauthorized)
		}
		c.Set(ctxRole, role)
		if need == RoleAdmin && role != RoleAdmin {
			return fmt.Errorf("%w: the token has role %q, which may only read; use an admin token to %s %s", ErrForbidden, role, m, c.Request().URL.Path)
		}
		return next(c)
	}
}

// lookupToken compares in constant time against every configured token.
func (s *Server) lookupToken(tok string) (Role, bool) {
	var found Role
	for t, r := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			found = r
		}
	}
	return found, found != ""
}
