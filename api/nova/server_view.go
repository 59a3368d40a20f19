package nova

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// novaTime is the timestamp format of Nova's server view.
const novaTime = "2006-01-02T15:04:05Z"

// The views of a server, as Nova's servers controller builds them.
const (
	serverShow    view = 1 << iota // GET /servers/{id}
	serverDetail                   // an entry of GET /servers/detail
	serverUpdate                   // the answer to PUT /servers/{id}
	serverRebuild                  // the answer to a rebuild
	serverBrief                    // an entry of GET /servers
	serverCreate                   // the answer to POST /servers
)

// serverItem is what a server's fields are computed from.
type serverItem struct {
	c      echo.Context
	v      fsm.Server
	status string
	host   fsm.Host // the owner host (Name "" when none or unknown)
	// admin: the caller sees every project. Of the fields Nova's default
	// policy shows to admins only, corral keeps to admins those it added
	// with the table (host_status, OS-EXT-SRV-ATTR:user_data); the older
	// extended attributes it shows to every caller that sees the server.
	admin bool
	group string // the server group it is a member of ("" for none)
	// diskConfig is the OS-DCF:diskConfig a create or rebuild asked for
	// ("" is MANUAL); adminPass the password it answers ("" for none).
	diskConfig, adminPass string
	// net is the server's Neutron ports (none in brief views).
	net fsm.ServerNet
	// in is the view rendered.
	in view
	// neutron: corral has [neutron] (the security groups are Neutron's);
	// bootGroups are the names a create asked for.
	neutron    bool
	bootGroups []string
}

// Sets of server views, for the table.
const (
	serverFull = serverShow | serverDetail | serverUpdate | serverRebuild
	serverRead = serverShow | serverDetail
	// serverAll75 are the fields Nova's PUT and rebuild answers carry
	// only from 2.75, when they became the full view of a GET.
	serverAll75 = serverUpdate | serverRebuild
)

// serverTable is Nova's server view (nova/api/openstack/compute/views/
// servers.py and the servers controller's show, update and rebuild):
// every field, the microversions that carry it and the views it is in.
var serverTable = &table[serverItem]{
	resource: "server",
	views:    []string{"show", "detail", "update", "rebuild", "brief", "create"},
	fields: []field[serverItem]{
		{name: "id", in: serverFull | serverBrief | serverCreate, value: func(s serverItem) any { return s.v.ID }},
		{name: "name", in: serverFull | serverBrief, value: func(s serverItem) any { return s.v.Name }},
		{name: "links", in: serverFull | serverBrief | serverCreate, value: func(s serverItem) any { return serverLinks(s.c, s.v.ID) }},
		{name: "OS-DCF:diskConfig", in: serverFull | serverCreate, value: diskConfigOf},
		{name: "adminPass", in: serverCreate | serverRebuild, when: "with a password (enable_instance_password)", value: adminPassOf},
		{name: "security_groups", in: serverRead | serverCreate, when: "with [neutron], when its ports have groups", value: securityGroupsField},
		{name: "security_groups", since: v2(75), in: serverAll75, when: "with [neutron], when its ports have groups", value: securityGroupsField},

		{name: "status", in: serverFull, value: func(s serverItem) any { return s.status }},
		{name: "tenant_id", in: serverFull, value: func(s serverItem) any { return s.v.Project() }},
		{name: "user_id", in: serverFull, value: func(s serverItem) any { return s.v.User() }},
		{name: "created", in: serverFull, value: func(s serverItem) any { return s.v.CreatedAt.UTC().Format(novaTime) }},
		{name: "updated", in: serverFull, value: func(s serverItem) any { return s.v.UpdatedAt.UTC().Format(novaTime) }},
		{name: "hostId", in: serverFull, value: func(s serverItem) any { return hostID(s.v) }},
		{name: "accessIPv4", in: serverFull, value: func(s serverItem) any { return s.v.AccessIPv4 }},
		{name: "accessIPv6", in: serverFull, value: func(s serverItem) any { return s.v.AccessIPv6 }},
		{name: "addresses", in: serverFull, value: func(s serverItem) any {
			// Nova's update and rebuild answers extend the addresses
			// only from 2.75, when they became a GET's view.
			return serverAddresses(s.v, s.net, s.in&serverAll75 == 0 || mvAtLeast(s.c, 2, 75))
		}},
		{name: "metadata", in: serverFull, value: func(s serverItem) any { return orEmpty(s.v.Metadata) }},
		{name: "image", in: serverFull, value: func(s serverItem) any { return serverImage(s.c, s.v) }},
		{name: "flavor", until: v2(46), in: serverFull, value: func(s serverItem) any { return flavorRef(s.c, s.v.Flavor) }},
		{name: "flavor", since: v2(47), in: serverFull, value: func(s serverItem) any { return embeddedFlavor(s.v.Flavor) }},
		{name: "progress", in: serverFull, when: "status ACTIVE, BUILD or REBUILD", value: func(s serverItem) any {
			switch s.status {
			case "ACTIVE", "BUILD", "REBUILD":
				return 0
			}
			return omit
		}},
		{name: "fault", in: serverFull, when: "status ERROR or DELETED, with a fault", value: serverFault},

		{name: "OS-EXT-AZ:availability_zone", in: serverRead, value: zoneOf},
		{name: "OS-EXT-AZ:availability_zone", since: v2(75), in: serverAll75, value: zoneOf},
		{name: "config_drive", in: serverRead, value: configDriveShown},
		{name: "config_drive", since: v2(75), in: serverAll75, value: configDriveShown},
		{name: "key_name", in: serverRead, value: keyNameOf},
		{name: "key_name", since: v2(54), in: serverRebuild, value: keyNameOf},
		{name: "key_name", since: v2(75), in: serverUpdate, value: keyNameOf},
		{name: "OS-SRV-USG:launched_at", in: serverRead, value: null},
		{name: "OS-SRV-USG:launched_at", since: v2(75), in: serverAll75, value: null},
		{name: "OS-SRV-USG:terminated_at", in: serverRead, value: null},
		{name: "OS-SRV-USG:terminated_at", since: v2(75), in: serverAll75, value: null},
		{name: "OS-EXT-STS:task_state", in: serverRead, value: taskStateOf},
		{name: "OS-EXT-STS:task_state", since: v2(75), in: serverAll75, value: taskStateOf},
		{name: "OS-EXT-STS:vm_state", in: serverRead, value: vmStateOf},
		{name: "OS-EXT-STS:vm_state", since: v2(75), in: serverAll75, value: vmStateOf},
		{name: "OS-EXT-STS:power_state", in: serverRead, value: powerStateOf},
		{name: "OS-EXT-STS:power_state", since: v2(75), in: serverAll75, value: powerStateOf},
		{name: "os-extended-volumes:volumes_attached", in: serverRead, value: noVolumes},
		{name: "os-extended-volumes:volumes_attached", since: v2(75), in: serverAll75, value: noVolumes},

		// The extended server attributes (OS-EXT-SRV-ATTR), and from 2.3
		// the ones the EC2 API needed.
		{name: "OS-EXT-SRV-ATTR:host", in: serverRead, value: ownerHost},
		{name: "OS-EXT-SRV-ATTR:host", since: v2(75), in: serverAll75, value: ownerHost},
		{name: "OS-EXT-SRV-ATTR:hypervisor_hostname", in: serverRead, value: nodeOf},
		{name: "OS-EXT-SRV-ATTR:hypervisor_hostname", since: v2(75), in: serverAll75, value: nodeOf},
		{name: "OS-EXT-SRV-ATTR:instance_name", in: serverRead, value: instanceName},
		{name: "OS-EXT-SRV-ATTR:instance_name", since: v2(75), in: serverAll75, value: instanceName},
		{name: "OS-EXT-SRV-ATTR:hostname", since: v2(3), in: serverRead, value: hostnameOf},
		{name: "OS-EXT-SRV-ATTR:hostname", since: v2(75), in: serverAll75, value: hostnameOf},
		{name: "OS-EXT-SRV-ATTR:kernel_id", since: v2(3), in: serverRead, value: emptyString},
		{name: "OS-EXT-SRV-ATTR:kernel_id", since: v2(75), in: serverAll75, value: emptyString},
		{name: "OS-EXT-SRV-ATTR:ramdisk_id", since: v2(3), in: serverRead, value: emptyString},
		{name: "OS-EXT-SRV-ATTR:ramdisk_id", since: v2(75), in: serverAll75, value: emptyString},
		{name: "OS-EXT-SRV-ATTR:launch_index", since: v2(3), in: serverRead, value: launchIndexOf},
		{name: "OS-EXT-SRV-ATTR:launch_index", since: v2(75), in: serverAll75, value: launchIndexOf},
		{name: "OS-EXT-SRV-ATTR:reservation_id", since: v2(3), in: serverRead, value: reservationOf},
		{name: "OS-EXT-SRV-ATTR:reservation_id", since: v2(75), in: serverAll75, value: reservationOf},
		{name: "OS-EXT-SRV-ATTR:root_device_name", since: v2(3), in: serverRead, value: null},
		{name: "OS-EXT-SRV-ATTR:root_device_name", since: v2(75), in: serverAll75, value: null},
		{name: "OS-EXT-SRV-ATTR:user_data", since: v2(3), in: serverRead, when: adminOnly, value: adminUserData},
		{name: "OS-EXT-SRV-ATTR:user_data", since: v2(75), in: serverUpdate, when: adminOnly, value: adminUserData},
		{name: "user_data", since: v2(57), in: serverRebuild, value: userDataOf},

		{name: "locked", since: v2(9), in: serverFull, value: func(s serverItem) any { return s.v.Locked }},
		{name: "host_status", since: v2(16), in: serverRead, when: adminOnly, value: hostStatus},
		{name: "host_status", since: v2(75), in: serverAll75, when: adminOnly, value: hostStatus},
		{name: "description", since: v2(19), in: serverFull, value: descriptionOf},
		{name: "tags", since: v2(26), in: serverFull, value: tagsOf},
		// corral keeps no trusted certificates or server groups: Nova's
		// empty values.
		{name: "trusted_image_certificates", since: v2(63), in: serverFull, value: null},
		{name: "server_groups", since: v2(71), in: serverShow | serverUpdate | serverRebuild, value: func(s serverItem) any {
			if s.group == "" {
				return []string{}
			}
			return []string{s.group}
		}},
		{name: "locked_reason", since: v2(73), in: serverFull, value: func(s serverItem) any { return nullable(s.v.LockedReason) }},
	},
}

const adminOnly = "to callers that see every project (Nova's default policy)"

func serverLinks(c echo.Context, id string) []wire.Link {
	u := core.BaseURL(c) + wire.ServersPath + "/" + url.PathEscape(id)
	return []wire.Link{{Rel: "self", Href: u}, {Rel: "bookmark", Href: strings.Replace(u, wire.ComputePrefix, "/compute", 1)}}
}

// serverView renders a server in one of its views.
func (h *Handlers) serverView(c echo.Context, in view, v fsm.Server) map[string]any {
	return h.serverViewPass(c, in, v, "")
}

// serverViewPass is serverView with the adminPass a rebuild answers.
func (h *Handlers) serverViewPass(c echo.Context, in view, v fsm.Server, adminPass string) map[string]any {
	it := serverItem{c: c, v: v, status: serverStatus(v), admin: core.CallerOf(c).SeesEveryProject(), adminPass: adminPass,
		group: h.st.Store().GroupOf(v.ID), net: h.st.Store().ServerNet(v.ID), in: in, neutron: h.networks != nil}
	if v.Host != "" {
		if host, err := h.st.Store().Host(v.Host); err == nil {
			it.host = host
		}
	}
	return serverTable.render(c, in, it)
}

// briefServer is an entry of GET /servers.
func briefServer(c echo.Context, v fsm.Server) map[string]any {
	return serverTable.render(c, serverBrief, serverItem{c: c, v: v})
}

// createdServer is the answer to POST /servers; groups are the security
// group names the boot asked for, with [neutron] (nil: "default").
func createdServer(c echo.Context, id, diskConfig, adminPass string, groups []string) map[string]any {
	return serverTable.render(c, serverCreate, serverItem{c: c, v: fsm.Server{ID: id}, diskConfig: diskConfig, adminPass: adminPass,
		in: serverCreate, bootGroups: groups})
}

func diskConfigOf(s serverItem) any {
	if s.diskConfig == "" {
		return "MANUAL"
	}
	return s.diskConfig
}

func adminPassOf(s serverItem) any {
	if s.adminPass == "" {
		return omit
	}
	return s.adminPass
}

func launchIndexOf(s serverItem) any { return s.v.LaunchIndex }

// reservationOf is the server's reservation id: null for a server created
// before corral kept them.
func reservationOf(s serverItem) any { return nullable(s.v.ReservationID) }

func descriptionOf(s serverItem) any {
	if s.v.Description == nil {
		return nil
	}
	return *s.v.Description
}

func tagsOf(s serverItem) any {
	if s.v.Tags == nil {
		return []string{}
	}
	return s.v.Tags
}

// serverStatus is the server's status as Nova shows it: a reboot or
// rebuild in progress shows in it (actions.go).
func serverStatus(v fsm.Server) string {
	switch v.TaskState {
	case fsm.TaskRebooting:
		return "REBOOT"
	case fsm.TaskRebootingHard:
		return "HARD_REBOOT"
	case fsm.TaskRebuilding:
		return "REBUILD"
	}
	return string(v.Status)
}

func vmStateOf(s serverItem) any {
	switch s.v.Status {
	case fsm.StatusActive:
		return "active"
	case fsm.StatusShutoff:
		return "stopped"
	case fsm.StatusError:
		return "error"
	case fsm.StatusDeleted:
		return "deleted"
	}
	return "building"
}

func powerStateOf(s serverItem) any {
	switch s.v.Status {
	case fsm.StatusActive:
		return powerRunning
	case fsm.StatusShutoff:
		return powerShutdown
	}
	return powerNoState
}

func taskStateOf(s serverItem) any { return nullable(s.v.TaskState) }

func serverFault(s serverItem) any {
	f := s.v.Fault
	if f == nil || (s.status != string(fsm.StatusError) && s.status != string(fsm.StatusDeleted)) {
		return omit
	}
	return map[string]any{"code": f.Code, "message": f.Message, "created": f.Created.UTC().Format(novaTime)}
}

// hostStatus is Nova's host_status: the owner's nova-compute service UP,
// MAINTENANCE while drained, UNKNOWN while not up; "" without an owner.
func hostStatus(s serverItem) any {
	switch {
	case !s.admin:
		return omit
	case s.host.Name == "":
		return ""
	case s.host.Drained:
		return "MAINTENANCE"
	case s.host.Status == fsm.HostUp:
		return "UP"
	}
	return "UNKNOWN"
}

// serverAddresses are the server's addresses, Nova's shape: with Neutron
// ports recorded (fsm.ServerNet), each port's fixed addresses under its
// network's name, with their version and, extended, their type and the
// port's MAC; without (no [neutron]), the requested networks by uuid (or
// port), without addresses. A server being built shows none, as Nova
// hides them while building.
func serverAddresses(v fsm.Server, net fsm.ServerNet, extended bool) map[string][]any {
	out := map[string][]any{}
	if v.Status == fsm.StatusBuild {
		return out
	}
	if len(net.Ports) > 0 {
		for _, p := range net.Ports {
			key := p.NetworkName
			if key == "" {
				key = p.NetworkID
			}
			list := out[key]
			if list == nil {
				list = []any{}
			}
			for _, ip := range p.FixedIPs {
				a := map[string]any{"addr": ip.Address, "version": ip.Version}
				if extended {
					a["OS-EXT-IPS:type"], a["OS-EXT-IPS-MAC:mac_addr"] = "fixed", p.MAC
				}
				list = append(list, a)
			}
			out[key] = list
		}
		return out
	}
	for _, n := range v.Networks {
		key := n.UUID
		if key == "" {
			key = n.Port
		}
		out[key] = []any{}
	}
	return out
}

// serverImage is the server's image, the one a rebuild in progress goes
// to as in Nova (fsm.Server.Image).
func serverImage(c echo.Context, v fsm.Server) any {
	image := v.Image()
	return map[string]any{"id": image, "links": []wire.Link{{Rel: "bookmark", Href: core.BaseURL(c) + "/images/" + url.PathEscape(image)}}}
}

func defaultSecurityGroups(serverItem) any {
	return []map[string]string{{"name": defaultSecurityGroup}}
}

// securityGroupsField is the security_groups of a view: a create's
// answer repeats the groups the request asked for ("default" when none),
// as Nova's; the other views show the server's (security_groups.go).
func securityGroupsField(s serverItem) any {
	if s.in != serverCreate {
		return serverSecurityGroups(s)
	}
	if len(s.bootGroups) == 0 {
		return defaultSecurityGroups(s)
	}
	out := make([]map[string]string, 0, len(s.bootGroups))
	for _, g := range s.bootGroups {
		out = append(out, map[string]string{"name": g})
	}
	return out
}

// defaultSecurityGroup is the one security group of every server.
const defaultSecurityGroup = "default"

func zoneOf(serverItem) any         { return availabilityZone }
func keyNameOf(s serverItem) any    { return nullable(s.v.KeyName) }
func ownerHost(s serverItem) any    { return nullable(s.v.Host) }
func nodeOf(s serverItem) any       { return nullable(s.v.NodeUUID) }
func instanceName(s serverItem) any { return "instance-" + s.v.ID }
func hostnameOf(s serverItem) any   { return s.v.Hostname() }
func userDataOf(s serverItem) any   { return nullable(s.v.UserData) }
func noVolumes(serverItem) any      { return []any{} }
func null(serverItem) any           { return nil }
func emptyString(serverItem) any    { return "" }
func zero(serverItem) any           { return 0 }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func adminUserData(s serverItem) any {
	if !s.admin {
		return omit
	}
	return nullable(s.v.UserData)
}

// flavorRef is the flavor of a server below microversion 2.47: a
// reference to its id.
func flavorRef(c echo.Context, f fsm.Flavor) map[string]any {
	return map[string]any{"id": f.ID, "links": []wire.Link{{Rel: "bookmark", Href: core.BaseURL(c) + "/compute/flavors/" + url.PathEscape(f.ID)}}}
}

// embeddedFlavor is the flavor stored in the server, from 2.47.
func embeddedFlavor(f fsm.Flavor) map[string]any {
	return map[string]any{"vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk, "ephemeral": f.Ephemeral,
		"swap": f.Swap, "original_name": f.Name, "extra_specs": orEmpty(f.ExtraSpecs)}
}

// hostID is Nova's hostId: the owner host hashed with the server's
// project, so that a project can tell whether two of its servers share a
// host without learning host names; empty without a host.
func hostID(v fsm.Server) string {
	if v.Host == "" {
		return ""
	}
	sum := sha256.Sum224([]byte(v.Project() + v.Host))
	return hex.EncodeToString(sum[:])
}

// configDriveShown is the server's config_drive field: "True" for a
// bare-metal server, whose deploy always carries a config drive.
func configDriveShown(s serverItem) any {
	if s.v.ClaimedNode != "" || s.v.NodeUUID != "" {
		return "True"
	}
	return ""
}
