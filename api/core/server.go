package core

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

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
	roles  map[string]Role // "METHOD /path" → the role the route table requires
	groups []group
	reqDur *prometheus.HistogramVec
	// rateLimited counts writes refused with 429; limiters are the
	// clients' write buckets (request_limits.go).
	rateLimited prometheus.Counter
	limiters    *clientLimiters
}

type group struct {
	prefix string
	m      echo.MiddlewareFunc
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
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "api"), roles: map[string]Role{}}
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
	e.Use(s.requestIDMiddleware, s.logMiddleware, s.limitMiddleware, s.authMiddleware, s.groupMiddleware)
	s.e = e
	return s, nil
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

// Group gives the paths under prefix (the prefix itself and every path
// below it) a middleware of their own, a surface's microversion
// negotiation, which runs after authentication for the routes and for the
// prefix's unknown paths and methods alike. The routes stay the router's
// own, so that a path the table knows with another method is a 405, and a
// path it does not know a 404.
func (s *Server) Group(prefix string, m echo.MiddlewareFunc) {
	s.groups = append(s.groups, group{prefix, m})
}

// groupMiddleware runs the middleware of the group the path is in.
func (s *Server) groupMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := c.Request().URL.Path
		for _, g := range s.groups {
			if p == g.prefix || strings.HasPrefix(p, g.prefix+"/") {
				return g.m(next)(c)
			}
		}
		return next(c)
	}
}

// Route mounts one line of the route table: the handler of method and
// path (an echo pattern), which callers reach only with role.
func (s *Server) Route(method, path string, role Role, h echo.HandlerFunc) {
	s.roles[method+" "+path] = role
	s.e.Add(method, path, h)
}
