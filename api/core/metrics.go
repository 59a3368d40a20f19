package core

import (
	"sort"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Metrics serves /metrics.
func (s *Server) Metrics() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
}

// MetricsRole is who may read /metrics: anyone, or with [telemetry]
// metrics_require_auth a reader token.
func (s *Server) MetricsRole() Role {
	if s.cfg.MetricsRequireAuth {
		return RoleReader
	}
	return RolePublic
}

// stateCollector exposes the replicated state as seen by this peer.
type stateCollector struct{ store func() *fsm.Store }

var (
	descServers      = prometheus.NewDesc("corral_servers", "Servers by status (this peer's replica).", []string{"status"}, nil)
	descReservations = prometheus.NewDesc("corral_reservations", "Ironic nodes reserved for servers.", nil, nil)
	descNodes        = prometheus.NewDesc("corral_ironic_nodes", "Mirrored Ironic nodes by resource class and state (free, used, unavailable).", []string{"resource_class", "state"}, nil)
	descHosts        = prometheus.NewDesc("corral_hosts", "Compute hosts by status.", []string{"status"}, nil)
	descConflicts    = prometheus.NewDesc("corral_provider_inventory_conflicts", "Ironic node providers whose latest inventory Placement refused (e.g. standard classes still in use).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descServers
	ch <- descReservations
	ch <- descNodes
	ch <- descHosts
	ch <- descConflicts
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store()
	byStatus := map[fsm.ServerStatus]int{fsm.StatusBuild: 0, fsm.StatusActive: 0, fsm.StatusError: 0, fsm.StatusDeleted: 0}
	for s, n := range st.ServerCounts() {
		byStatus[s] = n
	}
	for s, n := range byStatus {
		ch <- prometheus.MustNewConstMetric(descServers, prometheus.GaugeValue, float64(n), string(s))
	}
	ch <- prometheus.MustNewConstMetric(descReservations, prometheus.GaugeValue, float64(len(st.Reservations())))
	conflicts := 0
	for _, n := range st.Nodes() {
		if n.InventoryConflict != "" {
			conflicts++
		}
	}
	ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.GaugeValue, float64(conflicts))
	for _, cp := range Capacity(st.Nodes(), st.ReservedBy) {
		ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(cp.Free), cp.ResourceClass, "free")
		ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(cp.Used), cp.ResourceClass, "used")
		ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(cp.Unavailable), cp.ResourceClass, "unavailable")
	}
	hosts := map[fsm.HostStatus]int{fsm.HostUp: 0, fsm.HostDown: 0, fsm.HostLeft: 0}
	for _, h := range st.Hosts() {
		hosts[h.Status]++
	}
	for s, n := range hosts {
		ch <- prometheus.MustNewConstMetric(descHosts, prometheus.GaugeValue, float64(n), string(s))
	}
}

// Capacity is the cloud's bare-metal capacity per resource class, as
// GET /v1/hosts and the metrics report it.
func Capacity(nodes []fsm.Node, reservedBy func(string) string) []wire.Capacity {
	by := map[string]*wire.Capacity{}
	for _, n := range nodes {
		c := by[n.ResourceClass]
		if c == nil {
			c = &wire.Capacity{ResourceClass: fsm.NormalizeResourceClass(n.ResourceClass), IronicClass: n.ResourceClass}
			by[n.ResourceClass] = c
		}
		c.Total++
		switch {
		case reservedBy(n.UUID) != "" || n.InstanceUUID != "" || n.AllocationUUID != "":
			c.Used++
		case n.Available():
			c.Free++
		default:
			c.Unavailable++
		}
	}
	out := make([]wire.Capacity, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IronicClass < out[j].IronicClass })
	return out
}
