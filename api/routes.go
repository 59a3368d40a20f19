package api

import (
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
	// role: rolePublic; roleProjectReader or roleProjectMember (any
	// Keystone project reader or member, within its project; handlers
	// keep to it); RoleReader or RoleAdmin (cluster-wide: static tokens
	// of that role, Keystone admins). See auth.go.
	role Role
}

// routeTable is every route the API serves. Paths under novaPrefix and
// placementPrefix negotiate their microversions (see mount).
func (s *Server) routeTable() []route {
	const get, post, put, del, patch = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch
	metrics := echo.WrapHandler(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	internal := echo.WrapHandler(forward.NewHandler(s.c, forwardPaths))
	const nova, pl = novaPrefix, placementPrefix
	bm := BaremetalProxy{Source: s.cfg.BaremetalNodes}
	refuse := func(echo.Context) error { return echo.NewHTTPError(http.StatusForbidden, errCorralOwned.Error()) }
	return []route{
		// Health, readiness and metrics (cluster.go, metrics.go).
		{get, "/healthz", s.healthz, rolePublic},
		{get, "/readyz", s.readyz, rolePublic},
		{get, "/metrics", metrics, s.metricsRole()},

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

		// Operator: the gossip keyring on every member (operator.go).
		{get, KeyringPath, s.keyring, RoleAdmin},
		{post, KeyringPath, s.keyring, RoleAdmin},
		{put, KeyringPath, s.keyring, RoleAdmin},
		{del, KeyringPath, s.keyring, RoleAdmin},
		{post, RemovePeerPath, s.removePeer, RoleAdmin},
		{get, SnapshotPath, s.snapshot, RoleAdmin},
		{post, SnapshotPath, s.snapshot, RoleAdmin},
		{get, OpenAPIPath, s.openAPI, RoleReader},

		// The peers' endpoints (peers.go): forwarding to the leader
		// (cluster/forward), and the operator calls a peer relays after it
		// authorized the user. Only a peer's identity passes.
		{post, ApplyPath, internal, rolePeer},
		{get, ReadIndexPath, internal, rolePeer},
		{get, PeerKeyringPath, s.keyringLocal, rolePeer},
		{post, PeerKeyringPath, s.keyringLocal, rolePeer},
		{put, PeerKeyringPath, s.keyringLocal, rolePeer},
		{del, PeerKeyringPath, s.keyringLocal, rolePeer},
		{post, PeerRemovePeerPath, s.removePeer, rolePeer},
		{get, PeerSnapshotPath, s.snapshot, rolePeer},
		{post, PeerSnapshotPath, s.snapshot, rolePeer},

		// Compute, a Nova subset (nova.go, flavors.go, servers.go).
		{get, nova, s.novaVersion, roleProjectReader},
		{get, nova + "/", s.novaVersion, roleProjectReader},
		{get, nova + "/flavors", s.listFlavors(false), roleProjectReader},
		{get, nova + "/flavors/detail", s.listFlavors(true), roleProjectReader},
		{post, nova + "/flavors", s.createFlavor, RoleAdmin},
		{get, nova + "/flavors/:id", s.getFlavor, roleProjectReader},
		{del, nova + "/flavors/:id", s.deleteFlavor, RoleAdmin},
		{get, nova + "/flavors/:id/os-extra_specs", s.listExtraSpecs, roleProjectReader},
		{post, nova + "/flavors/:id/os-extra_specs", s.createExtraSpecs, RoleAdmin},
		{get, nova + "/flavors/:id/os-extra_specs/:key", s.getExtraSpec, roleProjectReader},
		{put, nova + "/flavors/:id/os-extra_specs/:key", s.updateExtraSpec, RoleAdmin},
		{del, nova + "/flavors/:id/os-extra_specs/:key", s.deleteExtraSpec, RoleAdmin},
		{post, nova + "/servers", s.createServer, roleProjectMember},
		{get, nova + "/servers", s.listServers(false), roleProjectReader},
		{get, nova + "/servers/detail", s.listServers(true), roleProjectReader},
		{get, nova + "/servers/:id", s.getServer, roleProjectReader},
		{del, nova + "/servers/:id", s.deleteServer, roleProjectMember},

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

		// Compute services and hypervisors, as Nova shows its Ironic driver (services.go, hypervisors.go).
		{get, nova + "/os-services", s.listComputeServices, RoleAdmin},
		{put, nova + "/os-services/:id", s.updateComputeService, RoleAdmin},
		{get, nova + "/os-hypervisors", s.listHypervisors(false), RoleAdmin},
		{get, nova + "/os-hypervisors/detail", s.listHypervisors(true), RoleAdmin},
		{get, nova + "/os-hypervisors/:id", s.getHypervisor, RoleAdmin},
		{get, nova + "/os-hypervisors/:id/uptime", s.hypervisorUptime, RoleAdmin},
		{get, nova + "/os-aggregates", s.listAggregates, RoleAdmin},

		// What else the openstack CLI asks for: versions, limits, zones, flavor updates and access
		// (compute_misc.go, flavor_access.go).
		{get, "/", s.novaVersions, rolePublic},
		{get, "/compute", s.novaVersions, rolePublic},
		{get, "/compute/", s.novaVersions, rolePublic},
		{get, nova + "/limits", s.limits, roleProjectReader},
		{get, nova + "/os-availability-zone", s.availabilityZones, roleProjectReader},
		{get, nova + "/os-availability-zone/detail", s.availabilityZonesDetail, RoleAdmin},
		{put, nova + "/flavors/:id", s.updateFlavor, RoleAdmin},
		{get, nova + "/flavors/:id/os-flavor-access", s.listFlavorAccess, RoleAdmin},
		{post, nova + "/flavors/:id/action", s.flavorAction, RoleAdmin},

		// Key pairs, per user (keypairs.go).
		{get, nova + "/os-keypairs", s.listKeyPairs, roleProjectReader},
		{post, nova + "/os-keypairs", s.createKeyPair, roleProjectMember},
		{get, nova + "/os-keypairs/:name", s.getKeyPair, roleProjectReader},
		{del, nova + "/os-keypairs/:name", s.deleteKeyPair, roleProjectMember},

		// Server actions and renames, carried out by the owner host (actions.go).
		{post, nova + "/servers/:id/action", s.serverAction, roleProjectMember},
		{put, nova + "/servers/:id", s.updateServer, roleProjectMember},
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
