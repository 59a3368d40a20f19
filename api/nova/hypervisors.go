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
// hosts come, go or drain), or to no host when there is none.
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
	var cands []sched.Candidate
	for _, host := range st.Hosts() {
		hosts[host.Name] = host
		if host.Kind == fsm.KindIronic && host.Status == fsm.HostUp && !host.Drained {
			cands = append(cands, sched.Candidate{Name: host.Name})
		}
	}
	byNode := map[string][]fsm.Server{}
	byHost := map[string][]fsm.Server{}
	for _, v := range st.Servers() {
		if !v.Live() {
			continue
		}
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
		hv.host = hosts[owner]
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

// hostIP is the address part of a host's API address.
func hostIP(h fsm.Host) string {
	if ip, _, err := net.SplitHostPort(h.APIAddr); err == nil {
		return ip
	}
	return h.APIAddr
}

// hypervisorID is a hypervisor's id at the request's microversion.
func hypervisorID(c echo.Context, hv hypervisor) any {
	if mvAtLeast(c, 2, 53) {
		return hv.id
	}
	return legacyID("hypervisor/" + hv.id)
}

// render shows a hypervisor as Nova does (the fields before 2.88).
func (hv hypervisor) render(c echo.Context, detail, withServers bool) map[string]any {
	out := map[string]any{"id": hypervisorID(c, hv), "hypervisor_hostname": hv.hostname,
		"state": hv.state, "status": hv.status}
	if withServers && len(hv.servers) > 0 {
		srv := make([]map[string]string, 0, len(hv.servers))
		for _, v := range hv.servers {
			srv = append(srv, map[string]string{"uuid": v.ID, "name": v.Name})
		}
		out["servers"] = srv
	}
	if !detail {
		return out
	}
	var svcID any
	var reason any
	svcHost := any(nil)
	if hv.host.Name != "" {
		svcHost = hv.host.Name
		svcID = legacyID("service/" + hv.host.Name)
		if mvAtLeast(c, 2, 53) {
			svcID = serviceUUID(hv.host.Name)
		}
		if hv.host.Drained && hv.host.DrainReason != "" {
			reason = hv.host.DrainReason
		}
	}
	var cpuInfo any = "{}"
	if mvAtLeast(c, 2, 28) {
		cpuInfo = map[string]any{}
	}
	memUsed, diskUsed, vcpusUsed := hv.used["MEMORY_MB"], hv.used["DISK_GB"], hv.used["VCPU"]
	fields := map[string]any{
		"hypervisor_type": hv.typ, "hypervisor_version": 1, "host_ip": hv.hostIP,
		"service":  map[string]any{"host": svcHost, "id": svcID, "disabled_reason": reason},
		"cpu_info": cpuInfo, "current_workload": 0, "running_vms": len(hv.servers),
		"vcpus": hv.vcpus, "vcpus_used": vcpusUsed,
		"memory_mb": hv.memoryMB, "memory_mb_used": memUsed, "free_ram_mb": hv.memoryMB - memUsed,
		"local_gb": hv.localGB, "local_gb_used": diskUsed, "free_disk_gb": hv.localGB - diskUsed,
		"disk_available_least": hv.localGB - diskUsed,
	}
	for k, v := range fields {
		out[k] = v
	}
	return out
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
