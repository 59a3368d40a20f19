package ironic

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the optional Prometheus collectors.
type metrics struct {
	dur  *prometheus.HistogramVec
	errs *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "corral_ironic_request_duration_seconds",
		Help:    "Duration of HTTP requests to Ironic, by client call and outcome (ok, error).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"call", "outcome"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "corral_ironic_errors_total",
		Help: "Failed HTTP requests to Ironic, by client call and code (HTTP status, timeout, network).",
	}, []string{"call", "code"})
	var err error
	if dur, err = registerCollector(reg, dur); err != nil {
		return nil, err
	}
	if errs, err = registerCollector(reg, errs); err != nil {
		return nil, err
	}
	return &metrics{dur: dur, errs: errs}, nil
}

// registerCollector registers col, or returns the collector of the same type registered before.
func registerCollector[T prometheus.Collector](reg prometheus.Registerer, col T) (T, error) {
	err := reg.Register(col)
	if err == nil {
		return col, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return col, fmt.Errorf("ironic: register metrics: %w", err)
}

func (m *metrics) observe(call, outcome, code string, d time.Duration) {
	if m == nil {
		return
	}
	m.dur.WithLabelValues(call, outcome).Observe(d.Seconds())
	if code != "" {
		m.errs.WithLabelValues(call, code).Inc()
	}
}
