package nova

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Extensions, as Nova's v2.1 API still lists them (GET /extensions): a
// fixed list that no longer says what a cloud has loaded. corral lists
// only the extensions it serves, with Nova's alias, name and description
// for each, so that a client reading the list is not told of volumes or
// floating IPs corral does not serve; and os-consoles, whose routes answer
// 410 Gone as Nova's do since it removed them while keeping the entry.

// extension is one entry of the list.
type extension struct {
	alias, name, description string
}

// extensions are corral's, sorted by alias as Nova sorts its list.
var extensions = []extension{
	{"OS-DCF", "DiskConfig", "Disk Management Extension."},
	{"OS-EXT-AZ", "ExtendedAvailabilityZone", "Extended Availability Zone support."},
	{"OS-EXT-SRV-ATTR", "ExtendedServerAttributes", "Extended Server Attributes support."},
	{"OS-EXT-STS", "ExtendedStatus", "Extended Status support."},
	{"OS-FLV-DISABLED", "FlavorDisabled", "Support to show the disabled status of a flavor."},
	{"OS-FLV-EXT-DATA", "FlavorExtraData", "Provide additional data for flavors."},
	{"OS-SCH-HNT", "SchedulerHints", "Pass arbitrary key/value pairs to the scheduler."},
	{"OS-SRV-USG", "ServerUsage", "Adds launched_at and terminated_at on Servers."},
	{"os-aggregates", "Aggregates", "Admin-only aggregate administration."},
	{"os-availability-zone", "AvailabilityZone", "1. Add availability_zone to the Create Server API.\n       2. Add availability zones describing.\n    "},
	{"os-baremetal-nodes", "BareMetalNodes", "Admin-only bare-metal node administration."},
	{"os-config-drive", "ConfigDrive", "Config Drive Extension."},
	{"os-consoles", "Consoles", "Interactive Console support."},
	{"os-flavor-access", "FlavorAccess", "Flavor access support."},
	{"os-flavor-extra-specs", "FlavorExtraSpecs", "Flavors extra specs support."},
	{"os-flavor-manage", "FlavorManage", "Flavor create/delete API support."},
	{"os-flavor-rxtx", "FlavorRxtx", "Support to show the rxtx status of a flavor."},
	{"os-flavor-swap", "FlavorSwap", "Support to show the swap status of a flavor."},
	{"os-hosts", "Hosts", "Admin-only host administration."},
	{"os-hypervisor-status", "HypervisorStatus", "Show hypervisor status."},
	{"os-hypervisors", "Hypervisors", "Admin-only hypervisor administration."},
	{"os-instance-actions", "InstanceActions", "View a log of actions and events taken on an instance."},
	{"os-keypairs", "Keypairs", "Keypair Support."},
	{"os-lock-server", "LockServer", "Enable lock/unlock server actions."},
	{"os-server-external-events", "ServerExternalEvents", "Server External Event Triggers."},
	{"os-server-groups", "ServerGroups", "Server group support."},
	{"os-server-start-stop", "ServerStartStop", "Start/Stop instance compute API support."},
	{"os-services", "Services", "Services support."},
	{"os-simple-tenant-usage", "SimpleTenantUsage", "Simple tenant usage extension."},
	{"os-user-data", "UserData", "Add user_data to the Create Server API."},
}

// extensionView is the one view of an extension.
const extensionView view = 1

// extensionTable is Nova's view of an extension (extension_info.py).
var extensionTable = &table[extension]{
	resource: "extension",
	views:    []string{"show"},
	fields: []field[extension]{
		{name: "alias", in: extensionView, value: func(x extension) any { return x.alias }},
		{name: "name", in: extensionView, value: func(x extension) any { return x.name }},
		{name: "description", in: extensionView, value: func(x extension) any { return x.description }},
		{name: "namespace", in: extensionView, value: func(extension) any { return "http://docs.openstack.org/compute/ext/fake_xml" }},
		{name: "updated", in: extensionView, value: func(extension) any { return "2014-12-03T00:00:00Z" }},
		{name: "links", in: extensionView, value: func(extension) any { return []any{} }},
	},
}

// ListExtensions is GET /extensions.
func (h *Handlers) ListExtensions(c echo.Context) error {
	out := make([]map[string]any, 0, len(extensions))
	for _, x := range extensions {
		out = append(out, extensionTable.render(c, extensionView, x))
	}
	return c.JSON(http.StatusOK, map[string]any{"extensions": out})
}

// GetExtension is GET /extensions/{alias}.
func (h *Handlers) GetExtension(c echo.Context) error {
	for _, x := range extensions {
		if x.alias == c.Param("alias") {
			return c.JSON(http.StatusOK, map[string]any{"extension": extensionTable.render(c, extensionView, x)})
		}
	}
	return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
}
