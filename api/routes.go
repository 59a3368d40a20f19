package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/api/placement"
	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/wire"
)

// route is one line of the route table: who may call what.
type route struct {
	method  string
	path    string
	handler echo.HandlerFunc
	// role: core.RolePublic; core.RoleProjectReader or RoleProjectMember
	// (any Keystone project reader or member, within its project; handlers
	// keep to it); core.RoleReader or RoleAdmin (cluster-wide: static
	// tokens of that role, Keystone admins); core.RolePeer (the peers'
	// endpoints). See api/core/auth.go.
	role core.Role
	// doc documents a route of the admin API in its OpenAPI document
	// (openapi.go); nil for every other route.
	doc *operation
}

// routeTable is every route the API serves. Paths under the compute and
// Placement prefixes negotiate their microversions (see mount).
func (s *Server) routeTable() []route {
	const get, post, put, del, patch = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch
	// Who may call: see route.role.
	const (
		anyone, readers, admins, peers = core.RolePublic, core.RoleReader, core.RoleAdmin, core.RolePeer
		projectReaders, projectMembers = core.RoleProjectReader, core.RoleProjectMember
		services                       = core.RoleService
	)
	const nova, pl = wire.ComputePrefix, wire.PlacementPrefix
	hosts, owners, keyring, snapshot := wire.HostsPath, wire.OwnersPath, wire.KeyringPath, wire.SnapshotPath
	peerKeyring, peerSnapshot := core.PeerKeyringPath, core.PeerSnapshotPath
	internal := echo.WrapHandler(forward.NewHandler(s.c, core.ForwardPaths))
	n, p, a := s.nova, s.placement, s.admin
	return []route{
		// Health, readiness and metrics (api/core).
		{get, "/healthz", core.Healthz, anyone, nil},
		{get, "/readyz", core.Readyz(s.c), anyone, nil},
		{get, "/metrics", s.core.Metrics(), s.core.MetricsRole(), nil},

		// Native admin API: the cluster and its hosts (api/admin).
		{get, wire.MembersPath, a.Members, readers, doc("cluster", "Gossip members and their raft roles").out("Members")},
		{get, wire.RaftPath, a.RaftStatus, readers, doc("cluster", "This peer's view of raft").out("RaftStatus")},
		{post, wire.LeavePath, a.Leave, admins, doc("cluster", "Make this peer leave the cluster cleanly and exit").status(http.StatusAccepted)},
		{get, hosts, a.ListHosts, readers, doc("hosts", "Compute hosts, their status and capacity")},
		{get, hosts + "/:name", a.GetHost, readers, doc("hosts", "One compute host")},
		{post, hosts + "/:name/drain", a.DrainHost(true), admins, doc("hosts", "Move a host's servers away and keep new ones off it")},
		{post, hosts + "/:name/undrain", a.DrainHost(false), admins, doc("hosts", "Let a drained host take servers again")},
		{post, hosts + "/:name/force-down", a.ForceDown, admins, doc("hosts", "Mark a host down now (its servers move)")},
		{get, wire.NodesPath, a.ListNodes, readers, doc("ironic", "Ironic nodes as the cluster mirrors them")},
		{get, wire.ReservationsPath, a.ListReservations, readers, doc("ironic", "Committed node reservations")},
		{get, wire.NetworksPath, a.ListNetworks, readers, doc("ironic", "Networks servers may attach to")},
		{post, owners + "/:id/move", a.MoveServer, admins, doc("servers", "Give a server a new owner host")},
		{get, owners + "/:id/owner", a.ServerOwner, readers, doc("servers", "A server's owner host and epoch")},
		{get, wire.RebalancePath, a.PlanRebalance, readers, doc("servers", "Moves that would even out the servers per host")},
		{post, wire.FlavorMigrationPath, a.FlavorMigration, admins, doc("manage", "Migrate flavors to Ironic resource classes")},
		// Upgrade from Nova's baremetal driver.
		{post, wire.AdoptServerPath, a.AdoptServer, admins, doc("manage", "Adopt a server built by Nova's baremetal driver")},

		// Operator: the gossip keyring on every member, raft peers, snapshots (api/admin).
		{get, keyring, a.Keyring, admins, doc("operator", "Every live member's gossip keyring").out("KeyringResponse")},
		{post, keyring, a.Keyring, admins, doc("operator", "Install a gossip key on every live member").in("KeyringRequest").out("KeyringResponse")},
		{put, keyring, a.Keyring, admins, doc("operator", "Make an installed gossip key primary on every live member").in("KeyringRequest").out("KeyringResponse")},
		{del, keyring, a.Keyring, admins, doc("operator", "Remove a gossip key from every live member").in("KeyringRequest").out("KeyringResponse")},
		{post, wire.RemovePeerPath, a.RemovePeer, admins, doc("operator", "Remove a dead peer from the raft configuration").in("RemovePeerRequest").status(http.StatusNoContent)},
		{get, snapshot, a.Snapshot, admins, doc("operator", "Save a consistent snapshot file of the replicated state (taken by the leader)").out("binary")},
		{post, snapshot, a.Snapshot, admins, doc("operator", "Restore a snapshot file into the running cluster").in("binary").out("SnapshotHeader")},
		{get, wire.OpenAPIPath, s.openAPI, readers, doc("meta", "This document")},

		// The peers' endpoints: forwarding to the leader (cluster/forward),
		// and the operator calls a peer relays after it authorized the
		// user. Only a peer's identity passes (api/core/peers.go).
		{post, core.ApplyPath, internal, peers, nil},
		{get, core.ReadIndexPath, internal, peers, nil},
		{get, peerKeyring, a.KeyringLocal, peers, nil},
		{post, peerKeyring, a.KeyringLocal, peers, nil},
		{put, peerKeyring, a.KeyringLocal, peers, nil},
		{del, peerKeyring, a.KeyringLocal, peers, nil},
		{post, core.PeerRemovePeerPath, a.RemovePeer, peers, nil},
		{get, peerSnapshot, a.Snapshot, peers, nil},
		{post, peerSnapshot, a.Snapshot, peers, nil},

		// Compute, a Nova subset (api/nova): versions, flavors, servers.
		{get, "/", n.Versions, anyone, nil},
		{get, "/compute", n.Versions, anyone, nil},
		{get, "/compute/", n.Versions, anyone, nil},
		{get, wire.LegacyComputePrefix, n.LegacyVersion, projectReaders, nil},
		{get, wire.LegacyComputePrefix + "/", n.LegacyVersion, projectReaders, nil},
		{get, nova, n.Version, projectReaders, nil},
		{get, nova + "/", n.Version, projectReaders, nil},
		{get, nova + "/flavors", n.ListFlavors(false), projectReaders, nil},
		{get, nova + "/flavors/detail", n.ListFlavors(true), projectReaders, nil},
		{post, nova + "/flavors", n.CreateFlavor, admins, nil},
		{get, nova + "/flavors/:id", n.GetFlavor, projectReaders, nil},
		{put, nova + "/flavors/:id", n.UpdateFlavor, admins, nil},
		{del, nova + "/flavors/:id", n.DeleteFlavor, admins, nil},
		{get, nova + "/flavors/:id/os-extra_specs", n.ListExtraSpecs, projectReaders, nil},
		{post, nova + "/flavors/:id/os-extra_specs", n.CreateExtraSpecs, admins, nil},
		{get, nova + "/flavors/:id/os-extra_specs/:key", n.GetExtraSpec, projectReaders, nil},
		{put, nova + "/flavors/:id/os-extra_specs/:key", n.UpdateExtraSpec, admins, nil},
		{del, nova + "/flavors/:id/os-extra_specs/:key", n.DeleteExtraSpec, admins, nil},
		{get, nova + "/flavors/:id/os-flavor-access", n.ListFlavorAccess, admins, nil},
		{post, nova + "/flavors/:id/action", n.FlavorAction, admins, nil},
		{post, nova + "/servers", n.CreateServer, projectMembers, nil},
		{get, nova + "/servers", n.ListServers(false), projectReaders, nil},
		{get, nova + "/servers/detail", n.ListServers(true), projectReaders, nil},
		{get, nova + "/servers/:id", n.GetServer, projectReaders, nil},
		{put, nova + "/servers/:id", n.UpdateServer, projectMembers, nil},
		{del, nova + "/servers/:id", n.DeleteServer, projectMembers, nil},
		{get, nova + "/servers/:id/metadata", n.ListServerMetadata, projectReaders, nil},
		{post, nova + "/servers/:id/metadata", n.SetServerMetadata(false), projectMembers, nil},
		{put, nova + "/servers/:id/metadata", n.SetServerMetadata(true), projectMembers, nil},
		{get, nova + "/servers/:id/metadata/:key", n.GetServerMetadataItem, projectReaders, nil},
		{put, nova + "/servers/:id/metadata/:key", n.SetServerMetadataItem, projectMembers, nil},
		{del, nova + "/servers/:id/metadata/:key", n.DeleteServerMetadataItem, projectMembers, nil},
		{get, nova + "/servers/:id/tags", n.ListServerTags, projectReaders, nil},
		{put, nova + "/servers/:id/tags", n.ReplaceServerTags, projectMembers, nil},
		{del, nova + "/servers/:id/tags", n.DeleteServerTags, projectMembers, nil},
		{get, nova + "/servers/:id/tags/:tag", n.GetServerTag, projectReaders, nil},
		{put, nova + "/servers/:id/tags/:tag", n.AddServerTag, projectMembers, nil},
		{del, nova + "/servers/:id/tags/:tag", n.DeleteServerTag, projectMembers, nil},
		{get, nova + "/servers/:id/os-server-password", n.ShowServerPassword, projectReaders, nil},
		{del, nova + "/servers/:id/os-server-password", n.ClearServerPassword, projectMembers, nil},
		{get, nova + "/servers/:id/diagnostics", n.ServerDiagnostics, projectReaders, nil},
		{get, nova + "/servers/:id/ips", n.ListServerIPs, projectReaders, nil},
		{get, nova + "/servers/:id/ips/:network", n.GetServerIPs, projectReaders, nil},
		// Interfaces (os-interface), with [neutron]; attach and detach carried out by the owner host.
		{get, nova + "/servers/:id/os-interface", n.ListInterfaces, projectReaders, nil},
		{post, nova + "/servers/:id/os-interface", n.AttachInterface, projectMembers, nil},
		{get, nova + "/servers/:id/os-interface/:port_id", n.GetInterface, projectReaders, nil},
		{del, nova + "/servers/:id/os-interface/:port_id", n.DetachInterface, projectMembers, nil},
		// A server's security groups, with [neutron].
		{get, nova + "/servers/:id/os-security-groups", n.ListServerSecurityGroups, projectReaders, nil},
		// Server actions, carried out by the owner host.
		{post, nova + "/servers/:id/action", n.ServerAction, projectMembers, nil},
		{get, nova + "/servers/:id/os-instance-actions", n.ListInstanceActions, projectReaders, nil},
		{get, nova + "/servers/:id/os-instance-actions/:request_id", n.GetInstanceAction, projectReaders, nil},
		// Events of other services (Neutron's port notices), Nova's service_or_admin.
		{post, nova + "/os-server-external-events", n.CreateExternalEvents, services, nil},
		// Consoles, which Nova removed: 410 for every caller and server.
		{get, nova + "/servers/:id/consoles", n.ConsolesGone, projectReaders, nil},
		{post, nova + "/servers/:id/consoles", n.ConsolesGone, projectReaders, nil},
		{get, nova + "/servers/:id/consoles/:console", n.ConsolesGone, projectReaders, nil},
		{del, nova + "/servers/:id/consoles/:console", n.ConsolesGone, projectReaders, nil},
		// Server groups, per project.
		{get, nova + "/os-server-groups", n.ListServerGroups, projectReaders, nil},
		{post, nova + "/os-server-groups", n.CreateServerGroup, projectMembers, nil},
		{get, nova + "/os-server-groups/:id", n.GetServerGroup, projectReaders, nil},
		{del, nova + "/os-server-groups/:id", n.DeleteServerGroup, projectMembers, nil},

		// Key pairs, per user; limits and zones, as the openstack CLI asks for them.
		{get, nova + "/os-keypairs", n.ListKeyPairs, projectReaders, nil},
		{post, nova + "/os-keypairs", n.CreateKeyPair, projectMembers, nil},
		{get, nova + "/os-keypairs/:name", n.GetKeyPair, projectReaders, nil},
		{del, nova + "/os-keypairs/:name", n.DeleteKeyPair, projectMembers, nil},
		{get, nova + "/limits", n.Limits, projectReaders, nil},
		// Quotas: a project's readers read its own, admins set them (api/nova/quotas.go).
		{get, nova + "/os-quota-sets/:id", n.ShowQuotaSet, projectReaders, nil},
		{put, nova + "/os-quota-sets/:id", n.UpdateQuotaSet, admins, nil},
		{del, nova + "/os-quota-sets/:id", n.DeleteQuotaSet, admins, nil},
		{get, nova + "/os-quota-sets/:id/defaults", n.QuotaSetDefaults, projectReaders, nil},
		{get, nova + "/os-quota-sets/:id/detail", n.QuotaSetDetail, projectReaders, nil},
		{get, nova + "/os-quota-class-sets/:id", n.ShowQuotaClassSet, readers, nil},
		{put, nova + "/os-quota-class-sets/:id", n.UpdateQuotaClassSet, admins, nil},
		{get, nova + "/os-availability-zone", n.AvailabilityZones, projectReaders, nil},
		{get, nova + "/os-availability-zone/detail", n.AvailabilityZonesDetail, admins, nil},

		// Compute services and hypervisors, as Nova shows its Ironic driver.
		{get, nova + "/os-services", n.ListServices, admins, nil},
		{put, nova + "/os-services/:id", n.UpdateService, admins, nil},
		{get, nova + "/os-hypervisors", n.ListHypervisors(false), admins, nil},
		{get, nova + "/os-hypervisors/detail", n.ListHypervisors(true), admins, nil},
		{get, nova + "/os-hypervisors/statistics", n.HypervisorStatistics, admins, nil},
		{get, nova + "/os-hypervisors/:id", n.GetHypervisor, admins, nil},
		{get, nova + "/os-hypervisors/:id/uptime", n.HypervisorUptime, admins, nil},
		{get, nova + "/os-hypervisors/:id/search", n.SearchHypervisors, admins, nil},
		{get, nova + "/os-hypervisors/:id/servers", n.HypervisorServers, admins, nil},
		{get, nova + "/os-aggregates", n.ListAggregates, admins, nil},
		// Nova's deprecated host API, up to microversion 2.42.
		{get, nova + "/os-hosts", n.ListOSHosts, admins, nil},
		{get, nova + "/os-hosts/:host", n.GetOSHost, admins, nil},
		{put, nova + "/os-hosts/:host", n.UpdateOSHost, admins, nil},
		{get, nova + "/os-hosts/:host/startup", n.OSHostPowerAction, admins, nil},
		{get, nova + "/os-hosts/:host/shutdown", n.OSHostPowerAction, admins, nil},
		{get, nova + "/os-hosts/:host/reboot", n.OSHostPowerAction, admins, nil},

		// Nova's image proxy to Glance (to 2.35; metadata to 2.38).
		{get, nova + "/images", n.ListImages(false), projectReaders, nil},
		{get, nova + "/images/detail", n.ListImages(true), projectReaders, nil},
		{get, nova + "/images/:id", n.ShowImage, projectReaders, nil},
		{del, nova + "/images/:id", n.DeleteImage, projectMembers, nil},
		{get, nova + "/images/:id/metadata", n.ListImageMetadata, projectReaders, nil},
		{post, nova + "/images/:id/metadata", n.SetImageMetadata(false), projectMembers, nil},
		{put, nova + "/images/:id/metadata", n.SetImageMetadata(true), projectMembers, nil},
		{get, nova + "/images/:id/metadata/:key", n.GetImageMetadataItem, projectReaders, nil},
		{put, nova + "/images/:id/metadata/:key", n.SetImageMetadataItem, projectMembers, nil},
		{del, nova + "/images/:id/metadata/:key", n.DeleteImageMetadataItem, projectMembers, nil},

		// Extensions (the v2.1 list, of what corral implements) and usage.
		{get, nova + "/extensions", n.ListExtensions, projectReaders, nil},
		{get, nova + "/extensions/:alias", n.GetExtension, projectReaders, nil},
		{get, nova + "/os-simple-tenant-usage", n.ListTenantUsages, admins, nil},
		{get, nova + "/os-simple-tenant-usage/:tenant", n.GetTenantUsage, projectReaders, nil},

		// Nova's baremetal extension, a read-only proxy to Ironic.
		{get, nova + "/os-baremetal-nodes", n.Baremetal.List, admins, nil},
		{get, nova + "/os-baremetal-nodes/:id", n.Baremetal.Show, admins, nil},
		{post, nova + "/os-baremetal-nodes", n.Baremetal.NotSupported, admins, nil},
		{del, nova + "/os-baremetal-nodes/:id", n.Baremetal.NotSupported, admins, nil},
		{post, nova + "/os-baremetal-nodes/:id/action", n.Baremetal.NotSupported, admins, nil},

		// Placement, read only: corral keeps the providers itself (api/placement).
		{get, pl, p.Root, readers, nil},
		{get, pl + "/", p.Root, readers, nil},
		{get, pl + "/resource_providers", p.ListProviders, readers, nil},
		{get, pl + "/resource_providers/:uuid", p.GetProvider, readers, nil},
		{get, pl + "/resource_providers/:uuid/inventories", p.Inventories, readers, nil},
		{get, pl + "/resource_providers/:uuid/inventories/:rc", p.Inventory, readers, nil},
		{get, pl + "/resource_providers/:uuid/usages", p.Usages, readers, nil},
		{get, pl + "/resource_providers/:uuid/traits", p.ProviderTraits, readers, nil},
		{get, pl + "/resource_providers/:uuid/aggregates", p.Aggregates, readers, nil},
		{get, pl + "/resource_providers/:uuid/allocations", p.ProviderAllocations, readers, nil},
		{get, pl + "/allocations/:consumer", p.ConsumerAllocations, readers, nil},
		{get, pl + "/allocation_candidates", p.AllocationCandidates, readers, nil},
		{get, pl + "/usages", p.ProjectUsages, readers, nil},
		{get, pl + "/traits", p.Traits, readers, nil},
		{get, pl + "/resource_classes", p.ResourceClasses, readers, nil},
		{post, pl + "/*", placement.RefuseWrite, admins, nil},
		{put, pl + "/*", placement.RefuseWrite, admins, nil},
		{del, pl + "/*", placement.RefuseWrite, admins, nil},
		{patch, pl + "/*", placement.RefuseWrite, admins, nil},
	}
}

// mount registers the route table. The paths under the compute and
// Placement prefixes negotiate their microversion, their unknown paths
// and methods too (core.Server.Group).
func (s *Server) mount() {
	s.core.Group(wire.ComputePrefix, nova.Negotiate)
	s.core.Group(wire.PlacementPrefix, placement.Negotiate)
	for _, r := range s.routeTable() {
		s.core.Route(r.method, r.path, r.role, r.handler)
	}
	s.document = s.openAPIDoc()
}
