package nova

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// os-hosts, Nova's deprecated host API (microversions 2.1 to 2.42; from
// 2.43 every route is 404), over corral's hosts as os-services shows them:
// each host runs one nova-compute, whose topic is "compute". The list
// leaves out disabled (drained) services, as Nova's does; a host's detail
// is the resources of its first compute node (its first hypervisor, as
// os-hypervisors lists them) and the flavors of the servers it owns, in
// total and per project. The power actions and a maintenance mode answer
// as Nova does with its Ironic driver, whose driver cannot act on a host:
// 501. So does a status, which Nova would keep as a trait of the host's
// resource providers and corral takes only through os-services.

// hostsMaxMinor is the last microversion of os-hosts (2.42).
const hostsMaxMinor = 42

// computeTopic is the topic of a nova-compute service, as os-hosts names it.
const computeTopic = "compute"

// The views of os-hosts.
const (
	hostList     view = 1 // an entry of GET /os-hosts
	hostResource view = 1 // an entry of GET /os-hosts/{host}
)

// hostEntry is one entry of the host list.
type hostEntry struct{ name, service, zone string }

// hostTable is Nova's host list entry (its hosts controller).
var hostTable = &table[hostEntry]{
	resource: "host",
	views:    []string{"list"},
	fields: []field[hostEntry]{
		{name: "host_name", until: v2(hostsMaxMinor), in: hostList, value: func(e hostEntry) any { return e.name }},
		{name: "service", until: v2(hostsMaxMinor), in: hostList, value: func(e hostEntry) any { return e.service }},
		{name: "zone", until: v2(hostsMaxMinor), in: hostList, value: func(e hostEntry) any { return e.zone }},
	},
}

// hostUsage is one resource row of a host's detail: the compute node's
// total or use, the servers' sum, or one project's servers.
type hostUsage struct {
	host, project         string
	cpu, memoryMB, diskGB int64
}

// hostResourceTable is Nova's resource row of a host's detail.
var hostResourceTable = &table[hostUsage]{
	resource: "host_resource",
	views:    []string{"show"},
	fields: []field[hostUsage]{
		{name: "host", until: v2(hostsMaxMinor), in: hostResource, value: func(u hostUsage) any { return u.host }},
		{name: "project", until: v2(hostsMaxMinor), in: hostResource, value: func(u hostUsage) any { return u.project }},
		{name: "cpu", until: v2(hostsMaxMinor), in: hostResource, value: func(u hostUsage) any { return u.cpu }},
		{name: "memory_mb", until: v2(hostsMaxMinor), in: hostResource, value: func(u hostUsage) any { return u.memoryMB }},
		{name: "disk_gb", until: v2(hostsMaxMinor), in: hostResource, value: func(u hostUsage) any { return u.diskGB }},
	},
}

// hostsGone is Nova's 404 for os-hosts from microversion 2.43.
func hostsGone(c echo.Context) error {
	if mvAtLeast(c, 2, hostsMaxMinor+1) {
		return echo.NewHTTPError(http.StatusNotFound, "The resource could not be found.")
	}
	return nil
}

// ListOSHosts is GET /os-hosts: every enabled nova-compute, of the zone
// asked for (an empty zone: of every zone).
func (h *Handlers) ListOSHosts(c echo.Context) error {
	if err := hostsGone(c); err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	zone := ""
	if zs := c.QueryParams()["zone"]; len(zs) > 0 {
		zone = zs[len(zs)-1] // the last, as webob reads a repeated parameter
	}
	out := []map[string]any{}
	for _, host := range h.st.Store().Hosts() {
		if host.Drained || zone != "" && zone != availabilityZone {
			continue
		}
		out = append(out, hostTable.render(c, hostList, hostEntry{name: host.Name, service: computeTopic, zone: availabilityZone}))
	}
	return c.JSON(http.StatusOK, map[string]any{"hosts": out})
}

// osHost finds the host named by the path, or answers Nova's 404 for a
// host no cell maps.
func (h *Handlers) osHost(c echo.Context) (fsm.Host, error) {
	name := c.Param("host")
	for _, host := range h.st.Store().Hosts() {
		if host.Name == name {
			return host, nil
		}
	}
	return fsm.Host{}, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Host '%s' is not mapped to any cell", name))
}

// GetOSHost is GET /os-hosts/{host}: the total and the use of the host's
// first compute node, the sum of its servers' flavors (used_max), and that
// sum per project, in the order of the projects' ids.
func (h *Handlers) GetOSHost(c echo.Context) error {
	if err := hostsGone(c); err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	host, err := h.osHost(c)
	if err != nil {
		return err
	}
	var node *hypervisor
	for _, hv := range h.hypervisors() { // sorted by id
		if hv.host.Name == host.Name {
			node = &hv
			break
		}
	}
	if node == nil {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Compute host %s could not be found.", host.Name))
	}
	rows := []hostUsage{
		{host: host.Name, project: "(total)", cpu: node.vcpus, memoryMB: node.memoryMB, diskGB: node.localGB},
		{host: host.Name, project: "(used_now)", cpu: node.used["VCPU"], memoryMB: node.used["MEMORY_MB"], diskGB: node.used["DISK_GB"]},
	}
	usedMax := hostUsage{host: host.Name, project: "(used_max)"}
	byProject := map[string]*hostUsage{}
	for _, v := range h.st.Store().LiveServers() {
		if v.Host != host.Name {
			continue
		}
		p := byProject[v.Project()]
		if p == nil {
			p = &hostUsage{host: host.Name, project: v.Project()}
			byProject[v.Project()] = p
		}
		for _, u := range []*hostUsage{&usedMax, p} {
			u.cpu += int64(v.Flavor.VCPUs)
			u.memoryMB += int64(v.Flavor.RAM)
			u.diskGB += int64(v.Flavor.Disk + v.Flavor.Ephemeral)
		}
	}
	rows = append(rows, usedMax)
	projects := make([]string, 0, len(byProject))
	for p := range byProject {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	for _, p := range projects {
		rows = append(rows, *byProject[p])
	}
	out := make([]map[string]any, 0, len(rows))
	for _, u := range rows {
		out = append(out, map[string]any{"resource": hostResourceTable.render(c, hostResource, u)})
	}
	return c.JSON(http.StatusOK, map[string]any{"host": out})
}

// hostNotSupported is Nova's 501 for what its Ironic driver cannot do to a
// host.
func hostNotSupported() error {
	return echo.NewHTTPError(http.StatusNotImplemented, "The requested functionality is not supported.")
}

// OSHostPowerAction is GET /os-hosts/{host}/startup, shutdown and reboot:
// Nova's 404 for an unknown host, else its 501, as Nova's Ironic driver
// powers no host.
func (h *Handlers) OSHostPowerAction(c echo.Context) error {
	if err := hostsGone(c); err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	if _, err := h.osHost(c); err != nil {
		return err
	}
	return hostNotSupported()
}

// hostUpdateRequest is PUT /os-hosts/{host}, as Nova's schema reads it.
type hostUpdateRequest struct {
	Status          json.RawMessage `json:"status"`
	MaintenanceMode json.RawMessage `json:"maintenance_mode"`
}

// hostUpdateWords are the values Nova's schema takes for status and
// maintenance_mode.
var hostUpdateWords = []string{"enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"}

// UpdateOSHost is PUT /os-hosts/{host}: the body checked as Nova's schema
// checks it, Nova's 404 for an unknown host, else its 501: corral does not
// take a host's status or maintenance mode through this API (os-services
// disables a host, the native drain moves its servers).
func (h *Handlers) UpdateOSHost(c echo.Context) error {
	if err := hostsGone(c); err != nil {
		return err
	}
	var body hostUpdateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	if len(body.Status) == 0 && len(body.MaintenanceMode) == 0 {
		return core.BadRequest("{} is not valid under any of the given schemas")
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"status", body.Status}, {"maintenance_mode", body.MaintenanceMode}} {
		if len(f.raw) == 0 {
			continue
		}
		s, isString := jsonString(f.raw)
		if !isString {
			v := string(f.raw)
			if v == "null" {
				v = "None"
			}
			return invalidInput(f.name, v, fmt.Sprintf("%s is not of type 'string'", shown(v)))
		}
		if !slices.Contains(hostUpdateWords, s) {
			return invalidInput(f.name, s, fmt.Sprintf("'%s' is not one of ['%s']", shown(s), strings.Join(hostUpdateWords, "', '")))
		}
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	if _, err := h.osHost(c); err != nil {
		return err
	}
	return hostNotSupported()
}

// Consoles: Nova removed os-consoles (the XenAPI console service) in
// 21.0.0 and answers every route of it with 410 Gone, at every
// microversion, for any server; it still lists the extension.

// ConsolesGone is every route of /servers/{id}/consoles.
func (h *Handlers) ConsolesGone(echo.Context) error {
	return echo.NewHTTPError(http.StatusGone, "This resource is no longer available. No forwarding address is given.")
}
