package core

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
)

// Config configures the server core.
type Config struct {
	// Tokens are the static tokens (token → role): the cluster's own, also
	// accepted with Keystone. The peer token is none of them (Peers).
	Tokens map[string]Role
	// Keystone, when set, validates every other token (X-Auth-Token);
	// callers then act within their Keystone project.
	Keystone TokenValidator
	// Peers authenticates the peers' endpoints (nil: every request to
	// them is refused).
	Peers    Peers
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Gatherer prometheus.Gatherer
	// Limits bound request bodies and each client's write rate.
	Limits Limits
	// MetricsRequireAuth makes /metrics need a reader token.
	MetricsRequireAuth bool
}

// Server is the echo server every route is mounted on, with the
// middleware every request goes through.
type Server struct {
	cfg    Config
	log    *slog.Logger
	e      *echo.Echo
	roles  map[routeOf]Role // the role the route table requires
	groups []group
	reqDur *prometheus.HistogramVec
	// observers are reqDur's histograms by routeKey (request.go).
	observers sync.Map
	// rateLimited counts writes refused with 429; limiters are the
	// clients' write buckets (request_limits.go).
	rateLimited prometheus.Counter
	limiters    *clientLimiters
}

// routeOf is a route of the table: its method and echo pattern.
type routeOf struct{ method, path string }

type group struct {
	prefix string
	before func(echo.Context) error
}

// NewServer builds the server core and registers its metrics, those of
// the replicated state of store among them.
func NewServer(cfg Config, store func() *fsm.Store) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		reg := prometheus.NewRegistry()
		cfg.Registry, cfg.Gatherer = reg, reg
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "api"), roles: map[routeOf]Role{}}
	s.reqDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "corral_http_request_duration_seconds",
		Help:    "HTTP requests served, by method, route and status.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"method", "route", "status"})
	s.initLimits()
	s.rateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "corral_http_rate_limited_total",
		Help: "Writes refused with 429 because their client exceeded its write rate.",
	})
	if err := cfg.Registry.Register(s.rateLimited); err != nil {
		return nil, fmt.Errorf("register API metrics: %w", err)
	}
	if err := cfg.Registry.Register(s.reqDur); err != nil {
		return nil, fmt.Errorf("register API metrics: %w", err)
	}
	if err := cfg.Registry.Register(&stateCollector{store: store}); err != nil {
		return nil, fmt.Errorf("register state metrics: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.JSONSerializer = jsonSerializer{}
	e.Use(s.middleware)
	s.e = e
	return s, nil
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

// Group gives the paths under prefix (the prefix itself and every path
// below it) a step of their own before the handler, a surface's
// microversion negotiation, which runs after authentication for the
// routes and for the prefix's unknown paths and methods alike. The routes
// stay the router's own, so that a path the table knows with another
// method is a 405, and a path it does not know a 404.
func (s *Server) Group(prefix string, before func(echo.Context) error) {
	s.groups = append(s.groups, group{prefix, before})
}

// middleware is every request's way through the core: its request id,
// its duration and log line, the limits, authentication, its group's
// step, then the handler. It is one middleware, not one per step: echo
// composes the middleware chain again for every request, a closure per
// middleware.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		setRequestID(c)
		start := time.Now()
		err := s.admit(c, next)
		s.logRequest(c, start, err)
		return err
	}
}

// admit runs the request's checks and then next.
func (s *Server) admit(c echo.Context, next echo.HandlerFunc) error {
	bounded, err := s.limit(c)
	if err != nil {
		return err
	}
	if err = s.authorize(c); err == nil {
		err = s.group(c)
	}
	if err == nil {
		err = next(c)
	}
	if err != nil && bounded && IsBodyTooLarge(err) {
		return bodyTooLarge(s.cfg.Limits.MaxBodyBytes)
	}
	return err
}

// group runs the step of the group the path is in.
func (s *Server) group(c echo.Context) error {
	p := c.Request().URL.Path
	for _, g := range s.groups {
		if p == g.prefix || strings.HasPrefix(p, g.prefix) && p[len(g.prefix)] == '/' {
			return g.before(c)
		}
	}
	return nil
}

// Route mounts one line of the route table: the handler of method and
// path (an echo pattern), which callers reach only with role.
func (s *Server) Route(method, path string, role Role, h echo.HandlerFunc) {
	s.roles[routeOf{method, path}] = role
	s.e.Add(method, path, h)
}
