package api

import (
	"context"
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

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/forward"
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
	// The leader's end of forwarding, served under PeerPathPrefix.
	forward.Leader
	ReadBarrier(ctx context.Context, c cluster.Consistency) error
	Members() []cluster.Member
	RaftStatus() cluster.RaftStatus
	Ready() []cluster.Check
}

// Config configures the API server.
type Config struct {
	// Tokens are the static tokens (token → role): the cluster's own, also
	// accepted with Keystone. The peer token is none of them (Peers).
	Tokens map[string]Role
	// Keystone, when set, validates every other token (X-Auth-Token);
	// callers then act within their Keystone project.
	Keystone TokenValidator
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Gatherer prometheus.Gatherer
	// OnLeave is called (in the background) by POST /v1/agent/leave.
	OnLeave func()
	// WriteTimeout bounds a write's proposal (default 10 s).
	WriteTimeout time.Duration
	// Operator serves the operator endpoints (gossip keyring; nil: 501).
	Operator Operator
	// Limits bound request bodies and each client's write rate (limits.go).
	Limits Limits
	// MetricsRequireAuth makes /metrics need a reader token.
	MetricsRequireAuth bool
	// BaremetalNodes is the Ironic of the os-baremetal-nodes proxy (nil: 404).
	BaremetalNodes BaremetalNodes
	// Images, when set ([glance]), checks that a boot's or rebuild's
	// imageRef is an active Glance image (images.go).
	Images ImageService
	// Peers authenticates the peers' endpoints (peers.go; nil: every
	// request to them is refused).
	Peers Peers
}

// Server is corral's HTTP API.
type Server struct {
	cfg    Config
	c      Cluster
	log    *slog.Logger
	e      *echo.Echo
	roles  map[string]Role // "METHOD /path" → the role the route table requires
	reqDur *prometheus.HistogramVec
	// rateLimited counts writes refused with 429; limiters are the
	// clients' write buckets (limits.go).
	rateLimited prometheus.Counter
	limiters    *clientLimiters
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
	if err := cfg.Registry.Register(&stateCollector{store: c.Store}); err != nil {
		return nil, fmt.Errorf("register state metrics: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.requestIDMiddleware, s.logMiddleware, s.limitMiddleware, s.authMiddleware)
	s.e = e
	s.mount()
	return s, nil
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

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
		if !strings.HasPrefix(route, PeerPathPrefix) && route != "/metrics" && route != "/healthz" && route != "/readyz" {
			s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", status, "duration", d, "request_id", requestID(c))
		}
		return err
	}
}

// bindStrict decodes a JSON body, rejecting unknown fields and trailing data.
func bindStrict(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body) // bounded by limitMiddleware
	if err != nil {
		if isBodyTooLarge(err) {
			return err // limitMiddleware answers 413
		}
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
