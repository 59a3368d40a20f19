package keystone

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a validation, as the metrics label them.
const (
	outcomeValid       = "valid"
	outcomeInvalid     = "invalid"
	outcomeMalformed   = "malformed"
	outcomeUnavailable = "unavailable"
)

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeValid
	case errors.Is(err, ErrInvalidToken):
		return outcomeInvalid
	default:
		return outcomeUnavailable
	}
}

// metrics are the optional Prometheus collectors; a nil *metrics records nothing.
type metrics struct {
	validations *prometheus.CounterVec
	cacheHits   prometheus.Counter
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		validations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_keystone_token_validations_total",
			Help: "Token validations answered, by outcome (valid, invalid, malformed, unavailable); cache hits included.",
		}, []string{"outcome"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corral_keystone_token_cache_hits_total",
			Help: "Token validations answered from the cache without asking Keystone.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corral_keystone_requests_total",
			Help: "Requests to Keystone, by call (validate, authenticate) and code (HTTP status, timeout, network).",
		}, []string{"call", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "corral_keystone_request_duration_seconds",
			Help:    "Duration of requests to Keystone, by call (validate, authenticate).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"call"}),
	}
	var err error
	if m.validations, err = register(reg, m.validations); err != nil {
		return nil, err
	}
	if m.cacheHits, err = register(reg, m.cacheHits); err != nil {
		return nil, err
	}
	if m.requests, err = register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers col, or returns the collector of the same type registered before (two
// validators on one registry share their series).
func register[T prometheus.Collector](reg prometheus.Registerer, col T) (T, error) {
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
	return col, fmt.Errorf("keystone: register metrics: %w", err)
}

func (m *metrics) validation(outcome string) {
	if m != nil {
		m.validations.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) cacheHit() {
	if m != nil {
		m.cacheHits.Inc()
	}
}

func (m *metrics) request(call, code string, d time.Duration) {
	if m != nil {
		m.requests.WithLabelValues(call, code).Inc()
		m.duration.WithLabelValues(call).Observe(d.Seconds())
	}
}
