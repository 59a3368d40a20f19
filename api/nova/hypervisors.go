package nova

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/fsm/placement"
	"github.com/corral-dev/corral/fsm/sched"
)

// Hypervisors, as Nova shows them with its Ironic driver: one per Ironic
// node, whose id (from microversion 2.53) and hypervisor_hostname are the
// node's UUID and whose type is "ironic"; and one per hypervisor-kind host,
// whose id is the host's resource provider and whose type is "fake" (the
// VM driver corral runs there).
//
// The service of a node's hypervisor is the corral host that owns the
// server holding the node. A node that holds no server belongs to the host
// corral's rendezvous hash picks for the node's UUID among the up,
// undrained Ironic hosts (every peer picks the same; it changes only when
// hosts come, go or drain), or, when none is up, among all the Ironic hosts;
// without any Ironic host the node has no service and, as in Nova, no
// hypervisor.
//
// A hypervisor is down when its host is, or when the node is missing from
// Ironic's latest listing; disabled when its host is drained or the node is
// in maintenance.

const (
	hypervisorIronic = "ironic"
	hypervisorVM     = "fake"
)

// hypervisor is one row of os-hypervisors, before rendering.
type hypervisor struct {
	id       string // UUID: node UUID or the host's resource provider
	hostname string
	typ      string
	host     fsm.Host // the service's host (Name "" when none)
	state    string
	status   string
	hostIP   string
	vcpus    int64
	memoryMB int64
	localGB  int64
	used     map[string]int64
	servers  []fsm.Server
}

// hypervisors lists every hypervisor, sorted by id.
func (h *Handlers) hypervisors() []hypervisor {
	st := h.st.Store()
	hosts := map[string]fsm.Host{}
	var cands, ironicHosts []sched.Candidate
	for _, host := range st.Hosts() {
		hosts[host.Name] = host
		if host.Kind != fsm.KindIronic {
			continue
		}
		ironicHosts = append(ironicHosts, sched.Candidate{Name: host.Name})
		if host.Status == fsm.HostUp && !host.Drained {
			cands = append(cands, sched.Candidate{Name: host.Name})
		}
	}
	byNode := map[string][]fsm.Server{}
	byHost := map[string][]fsm.Server{}
	for _, v := range st.LiveServers() {
		node := v.NodeUUID
		if node == "" {
			node = v.ClaimedNode
		}
		if node != "" {
			byNode[node] = append(byNode[node], v)
		} else if hosts[v.Host].Kind == fsm.KindHypervisor {
			byHost[v.Host] = append(byHost[v.Host], v)
		}
	}
	var out []hypervisor
	for _, n := range st.Nodes() {
		hv := hypervisor{id: n.UUID, hostname: n.UUID, typ: hypervisorIronic, servers: byNode[n.UUID]}
		owner := ""
		if len(hv.servers) > 0 {
			owner = hv.servers[0].Host
		} else {
			owner = sched.ChooseHost(cands, n.UUID)
		}
		if _, ok := hosts[owner]; !ok {
			// No up host to own it: the node stays with a host that is
			// down or drained, as a compute node stays with its service.
			owner = sched.ChooseHost(ironicHosts, n.UUID)
		}
		var ok bool
		if hv.host, ok = hosts[owner]; !ok {
			continue // without any Ironic host, as Nova without the node's service
		}
		hv.state, hv.status = hypervisorState(hv.host, n.Missing, n.Maintenance)
		hv.hostIP = hostIP(hv.host)
		out = append(out, hv)
	}
	for _, host := range st.Hosts() {
		if host.Kind != fsm.KindHypervisor {
			continue
		}
		hv := hypervisor{id: fsm.HostProviderUUID(host.Name), hostname: host.Name, typ: hypervisorVM, host: host,
			hostIP: hostIP(host), servers: byHost[host.Name]}
		hv.state, hv.status = hypervisorState(host, false, false)
		st.PlacementRead(func(p *placement.Store) {
			if prov, err := p.Provider(hv.id); err == nil {
				hv.vcpus = prov.Inventories["VCPU"].Total
				hv.memoryMB = prov.Inventories["MEMORY_MB"].Total
				hv.localGB = prov.Inventories["DISK_GB"].Total
			}
			hv.used, _ = p.Usages(hv.id)
		})
		out = append(out, hv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func hypervisorState(h fsm.Host, missing, maintenance bool) (state, status string) {
	state, status = "up", "enabled"
	if h.Name == "" || h.Status != fsm.HostUp || missing {
		state = "down"
	}
	if h.Name == "" || h.Drained || maintenance {
		status = "disabled"
	}
	return state, status
}

// hostIP is the IP address of a host's API address ("" when it has none).
func hostIP(h fsm.Host) string {
	addr := h.APIAddr
	if ip, _, err := net.SplitHostPort(addr); err == nil {
		addr = ip
	}
	if net.ParseIP(addr) == nil {
		return ""
	}
	return addr
}

// hypervisorID is a hypervisor's id at the request's microversion.
func hypervisorID(c echo.Context, hv hypervisor) any {
	if mvAtLeast(c, 2, 53) {
		return hv.id
	}
	return legacyID("hypervisor/" + hv.id)
}

// The views of a hypervisor (Nova's hypervisors controller).
const (
	hypervisorBrief  view = 1 << iota // an entry of GET /os-hypervisors (and of /os-hypervisors/{pattern}/search)
	hypervisorDetail                  // GET /os-hypervisors/{id}, an entry of /os-hypervisors/detail
	hypervisorOn                      // an entry of GET /os-hypervisors/{pattern}/servers (until 2.52)
)

type hypervisorItem struct {
	hv          hypervisor
	withServers bool // with_servers=true (2.53)
}

// hypervisorTable is Nova's hypervisor view, up to 2.87 (2.88 dropped the
// resource fields).
var hypervisorTable = &table[hypervisorItem]{
	resource: "hypervisor",
	views:    []string{"brief", "detail", "servers"},
	fields: []field[hypervisorItem]{
		{name: "id", until: v2(52), in: hypervisorBrief | hypervisorDetail | hypervisorOn, value: func(i hypervisorItem) any { return legacyID("hypervisor/" + i.hv.id) }},
		{name: "id", since: v2(53), in: hypervisorBrief | hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.id }},
		{name: "hypervisor_hostname", in: hypervisorBrief | hypervisorDetail | hypervisorOn, value: func(i hypervisorItem) any { return i.hv.hostname }},
		{name: "state", in: hypervisorBrief | hypervisorDetail | hypervisorOn, value: func(i hypervisorItem) any { return i.hv.state }},
		{name: "status", in: hypervisorBrief | hypervisorDetail | hypervisorOn, value: func(i hypervisorItem) any { return i.hv.status }},
		{name: "servers", until: v2(52), in: hypervisorOn, when: "a hypervisor with servers", value: func(i hypervisorItem) any {
			if len(i.hv.servers) == 0 {
				return omit
			}
			return hypervisorServers(i.hv)
		}},
		{name: "servers", since: v2(53), until: v2(74), in: hypervisorBrief | hypervisorDetail,
			when: "with_servers=true, on a hypervisor with servers", value: func(i hypervisorItem) any {
				if !i.withServers || len(i.hv.servers) == 0 {
					return omit
				}
				return hypervisorServers(i.hv)
			}},
		{name: "servers", since: v2(75), in: hypervisorBrief | hypervisorDetail, when: "with_servers=true", value: func(i hypervisorItem) any {
			if !i.withServers {
				return omit
			}
			return hypervisorServers(i.hv)
		}},
		{name: "hypervisor_type", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.typ }},
		{name: "hypervisor_version", in: hypervisorDetail, value: func(hypervisorItem) any { return 1 }},
		{name: "host_ip", in: hypervisorDetail, value: func(i hypervisorItem) any { return nullable(i.hv.hostIP) }},
		{name: "service", until: v2(52), in: hypervisorDetail, value: func(i hypervisorItem) any {
			return hypervisorService(i.hv, legacyID("service/"+i.hv.host.Name))
		}},
		{name: "service", since: v2(53), in: hypervisorDetail, value: func(i hypervisorItem) any {
			return hypervisorService(i.hv, serviceUUID(i.hv.host.Name))
		}},
		{name: "cpu_info", until: v2(27), in: hypervisorDetail, value: func(hypervisorItem) any { return "{}" }},
		{name: "cpu_info", since: v2(28), in: hypervisorDetail, value: func(hypervisorItem) any { return map[string]any{} }},
		{name: "current_workload", in: hypervisorDetail, value: func(hypervisorItem) any { return 0 }},
		{name: "running_vms", in: hypervisorDetail, value: func(i hypervisorItem) any { return len(i.hv.servers) }},
		{name: "vcpus", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.vcpus }},
		{name: "vcpus_used", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.used["VCPU"] }},
		{name: "memory_mb", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.memoryMB }},
		{name: "memory_mb_used", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.used["MEMORY_MB"] }},
		{name: "free_ram_mb", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.memoryMB - i.hv.used["MEMORY_MB"] }},
		{name: "local_gb", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.localGB }},
		{name: "local_gb_used", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.used["DISK_GB"] }},
		{name: "free_disk_gb", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.localGB - i.hv.used["DISK_GB"] }},
		{name: "disk_available_least", in: hypervisorDetail, value: func(i hypervisorItem) any { return i.hv.localGB - i.hv.used["DISK_GB"] }},
	},
}

func hypervisorServers(hv hypervisor) []map[string]string {
	out := make([]map[string]string, 0, len(hv.servers))
	for _, v := range hv.servers {
		out = append(out, map[string]string{"uuid": v.ID, "name": v.Name})
	}
	return out
}

// hypervisorService is the nova-compute service of a hypervisor's host.
func hypervisorService(hv hypervisor, id any) map[string]any {
	var reason any
	if hv.host.Drained && hv.host.DrainReason != "" {
		reason = hv.host.DrainReason
	}
	return map[string]any{"host": hv.host.Name, "id": id, "disabled_reason": reason}
}

// render shows a hypervisor as Nova does.
func (hv hypervisor) render(c echo.Context, detail, withServers bool) map[string]any {
	in := hypervisorBrief
	if detail {
		in = hypervisorDetail
	}
	return hypervisorTable.render(c, in, hypervisorItem{hv: hv, withServers: withServers})
}

// parseBoolQuery parses a boolean query parameter as Nova does.
func parseBoolQuery(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	switch strings.ToLower(v) {
	case "", "0", "false", "f", "no", "n", "off":
		return false, nil
	case "1", "true", "t", "yes", "y", "on":
		return true, nil
	}
	return false, core.BadRequest("Invalid input for query parameters %s. Value: %s. Expected a boolean.", name, v)
}

// ListHypervisors is GET /os-hypervisors, or with detail
// /os-hypervisors/detail.
func (h *Handlers) ListHypervisors(detail bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		withServers := false
		pattern := ""
		if mvAtLeast(c, 2, 53) {
			var err error
			if withServers, err = parseBoolQuery(c, "with_servers"); err != nil {
				return err
			}
			pattern = c.QueryParam("hypervisor_hostname_pattern")
		}
		p := page{limit: -1}
		if mvAtLeast(c, 2, 33) {
			var err error
			if p, err = parsePage(c.QueryParams(), limitZeroIsEmpty); err != nil {
				return err
			}
		}
		if pattern != "" && (p.limit >= 0 || p.marker != "") {
			return core.BadRequest("Paging over hypervisors with the hypervisor_hostname_pattern query parameter is not supported.")
		}
		if err := h.st.ReadBarrier(c); err != nil {
			return err
		}
		id := func(hv hypervisor) string { return fmt.Sprint(hypervisorID(c, hv)) }
		listed, more, err := pageOf(h.hypervisors(), p, id, func(hv hypervisor) bool {
			return pattern == "" || strings.Contains(hv.hostname, pattern)
		})
		if err != nil {
			return err
		}
		if pattern != "" && len(listed) == 0 {
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No hypervisor matching '%s' could be found.", pattern))
		}
		out := make([]map[string]any, 0, len(listed))
		for _, hv := range listed {
			out = append(out, hv.render(c, detail, withServers))
		}
		resp := map[string]any{"hypervisors": out}
		if more && len(listed) > 0 {
			resp["hypervisors_links"] = nextLinks(c, id(listed[len(listed)-1]))
		}
		return c.JSON(http.StatusOK, resp)
	}
}

// findHypervisor resolves the {id} of a hypervisor path at the request's
// microversion: a UUID from 2.53, an integer before.
func (h *Handlers) findHypervisor(c echo.Context) (hypervisor, error) {
	id := c.Param("id")
	notFound := echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Hypervisor with ID %s could not be found.", id))
	if mvAtLeast(c, 2, 53) {
		if uuid.Validate(id) != nil {
			return hypervisor{}, core.BadRequest("Invalid uuid %s", id)
		}
	} else if _, ok := parseLegacyID(id); !ok {
		return hypervisor{}, notFound
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return hypervisor{}, err
	}
	for _, hv := range h.hypervisors() {
		if fmt.Sprint(hypervisorID(c, hv)) == id {
			return hv, nil
		}
	}
	return hypervisor{}, notFound
}

// GetHypervisor is GET /os-hypervisors/{id}.
func (h *Handlers) GetHypervisor(c echo.Context) error {
	withServers := false
	if mvAtLeast(c, 2, 53) {
		var err error
		if withServers, err = parseBoolQuery(c, "with_servers"); err != nil {
			return err
		}
	}
	hv, err := h.findHypervisor(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"hypervisor": hv.render(c, true, withServers)})
}

// HypervisorUptime answers as Nova does for drivers that cannot tell the
// uptime (its Ironic driver among them).
func (h *Handlers) HypervisorUptime(c echo.Context) error {
	if _, err := h.findHypervisor(c); err != nil {
		return err
	}
	return echo.NewHTTPError(http.StatusNotImplemented, "Virt driver does not implement uptime function.")
}

// ListAggregates answers the host aggregates corral has: none.
func (h *Handlers) ListAggregates(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"aggregates": []any{}})
}
