// Package api serves corral's REST API with echo: the native /v1 admin
// API, a Nova-shaped compute subset, health, readiness and metrics.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
)

// Role is what a token may do.
type Role string

// Roles.
const (
	RoleAdmin  Role = "admin"  // read and write
	RoleReader Role = "reader" // read only
)

// Cluster is what the API needs from the peer it runs on.
type Cluster interface {
	Name() string
	Store() *fsm.Store
	Propose(ctx context.Context, cmd fsm.Command) (uint64, error)
	ApplyForwarded(ctx context.Context, data []byte) (uint64, error)
	ReadIndex(ctx context.Context, verify bool) (uint64, error)
	ReadBarrier(ctx context.Context, c cluster.Consistency) error
	Members() []cluster.Member
	RaftStatus() cluster.RaftStatus
	Ready() []cluster.Check
}

// Config configures the API server.
type Config struct {
	Tokens   map[string]Role // token → role
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Gatherer prometheus.Gatherer
	// OnLeave is called (in the background) by POST /v1/agent/leave.
	OnLeave func()
	// WriteTimeout bounds a write's proposal (default 10 s).
	WriteTimeout time.Duration
}

// Server is corral's HTTP API.
type Server struct {
	cfg    Config
	c      Cluster
	log    *slog.Logger
	e      *echo.Echo
	reqDur *prometheus.HistogramVec
}

// New builds the API for one peer.
func New(cfg Config, c Cluster) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		reg := prometheus.NewRegistry()
		cfg.Registry, cfg.Gatherer = reg, reg
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	s := &Server{cfg: cfg, c: c, log: cfg.Logger.With("component", "api")}
	s.reqDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "corral_http_request_duration_seconds",
		Help:    "HTTP requests served, by method, route and status.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"method", "route", "status"})
	if err := cfg.Registry.Register(s.reqDur); err != nil {
		return nil, fmt.Errorf("register API metrics: %w", err)
	}
	if err := cfg.Registry.Register(&stateCollector{store: c.Store}); err != nil {
		return nil, fmt.Errorf("register state metrics: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.requestIDMiddleware, s.logMiddleware, s.authMiddleware)
	s.e = e
	s.routes()
	return s, nil
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

func (s *Server) routes() {
	e := s.e
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{})))

	e.GET("/v1/cluster/members", s.members)
	e.GET("/v1/cluster/raft", s.raftStatus)
	e.GET("/v1/hosts", s.listHosts)
	e.GET("/v1/hosts/:name", s.getHost)
	e.GET("/v1/nodes", s.listNodes)
	e.GET("/v1/reservations", s.listReservations)
	e.GET("/v1/networks", s.listNetworks)
	e.POST("/v1/manage/ironic-flavor-migration", s.flavorMigration)
	e.POST("/v1/agent/leave", s.leave)
	s.ownershipRoutes(e)
	e.POST(cluster.ForwardApplyPath, s.forwardApply)
	e.GET(cluster.ForwardReadIndexPath, s.forwardReadIndex)

	s.novaRoutes(e.Group(novaPrefix, s.novaVersionMiddleware))
	s.placementRoutes(e)
}

var reqIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

const ctxRequestID = "request_id"
const ctxRole = "role"

// requestIDMiddleware gives every request an OpenStack request id, keeping
// a well-formed one the client sent.
func (s *Server) requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rid := c.Request().Header.Get("X-OpenStack-Request-Id")
		if !reqIDRE.MatchString(rid) {
			rid = "req-" + uuid.NewString()
		}
		c.Set(ctxRequestID, rid)
		c.Response().Header().Set("X-OpenStack-Request-Id", rid)
		c.Response().Header().Set("X-Compute-Request-Id", rid)
		return next(c)
	}
}

func requestID(c echo.Context) string {
	s, _ := c.Get(ctxRequestID).(string)
	return s
}

func (s *Server) logMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status, _ = classify(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.reqDur.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(d.Seconds())
		if !strings.HasPrefix(route, "/v1/internal/") && route != "/metrics" && route != "/healthz" && route != "/readyz" {
			s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", status, "duration", d, "request_id", requestID(c))
		}
		return err
	}
}

// public routes need no token.
func public(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics"
}

func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if public(c.Request().URL.Path) {
			return next(c)
		}
		tok := c.Request().Header.Get("X-Auth-Token")
		if tok == "" {
			if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
				tok = strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
			}
		}
		if tok == "" {
			return ErrUnauthorized
		}
		role, ok := s.lookupToken(tok)
		if !ok {
			return fmt.Errorf("%w: the token is not known to this cluster; check CORRAL_TOKEN against [auth] in the agents' configuration", ErrUnauthorized)
		}
		c.Set(ctxRole, role)
		m := c.Request().Method
		if role != RoleAdmin && m != http.MethodGet && m != http.MethodHead {
			return fmt.Errorf("%w: the token has role %q, which may only read; use an admin token to %s %s", ErrForbidden, role, m, c.Request().URL.Path)
		}
		if role != RoleAdmin && strings.HasPrefix(c.Request().URL.Path, "/v1/internal/") {
			return fmt.Errorf("%w: internal peer endpoints need an admin token", ErrForbidden)
		}
		return next(c)
	}
}

// lookupToken compares in constant time against every configured token.
func (s *Server) lookupToken(tok string) (Role, bool) {
	var found Role
	for t, r := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			found = r
		}
	}
	return found, found != ""
}

// bindStrict decodes a JSON body, rejecting unknown fields and trailing data.
func bindStrict(c echo.Context, v any) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 1<<20))
	if err != nil {
		return badRequest("cannot read the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("the request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: %v", err)
	}
	// Only whitespace may follow the object (dec.More misses a stray '}' or ']').
	if rest := strings.TrimSpace(string(body[dec.InputOffset():])); rest != "" {
		return badRequest("malformed JSON body: unexpected data after the JSON object")
	}
	return nil
}

// readBarrier honours ?consistency= for reads of replicated state.
func (s *Server) readBarrier(c echo.Context) error {
	lvl, err := cluster.ParseConsistency(c.QueryParam("consistency"))
	if err != nil {
		return err
	}
	return s.c.ReadBarrier(c.Request().Context(), lvl)
}

// propose commits cmd with the request id attached and a bounded time.
func (s *Server) propose(c echo.Context, cmd fsm.Command) error {
	cmd.Header().RequestID = requestID(c)
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.WriteTimeout)
	defer cancel()
	_, err := s.c.Propose(ctx, cmd)
	return err
}
