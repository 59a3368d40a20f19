package compute

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	builds    *prometheus.CounterVec
	buildTime prometheus.Histogram
	deletes   prometheus.Counter
	fenced    prometheus.Counter
	takeover  prometheus.Histogram
	awaitTime prometheus.Histogram
	actions   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_server_builds_total", Help: "Server builds finished by this host, by outcome (active, error).",
		}, []string{"outcome"}),
		buildTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_server_build_duration_seconds", Help: "Time from a server's first build step on this host to ACTIVE.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_server_deletes_total", Help: "Servers this host deleted.",
		}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_fenced_operations_total", Help: "Operations this host stopped because the log gave the server to another owner or epoch.",
		}),
		takeover: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_takeover_seconds", Help: "From a reassignment plan committed to the new owner acting on the server.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		awaitTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "corral_server_await_seconds", Help: "Time a server waited for its backend (a deploy or undeploy in Ironic) without holding a worker.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_server_actions_total", Help: "Server actions (stop, start, reboot, rebuild) this host finished, by action and outcome (done, error).",
		}, []string{"action", "outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.builds, m.buildTime, m.deletes, m.fenced, m.takeover, m.awaitTime, m.actions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
