package core

import (
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
	ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.GaugeValue, float64(len(st.ConflictedNodeIDs())))
	for _, cp := range Capacity(st) {
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
func Capacity(st *fsm.Store) []wire.Capacity {
	classes := st.NodeCapacity()
	out := make([]wire.Capacity, 0, len(classes))
	for _, c := range classes {
		out = append(out, wire.Capacity{ResourceClass: fsm.NormalizeResourceClass(c.IronicClass), IronicClass: c.IronicClass,
			Total: c.Total, Free: c.Free, Used: c.Used, Unavailable: c.Unavailable})
	}
	return out
}
