package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/api/admin"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/api/nova"
	"github.com/corral-dev/corral/api/placement"
)

// Config configures the API server.
type Config struct {
	// Tokens are the static tokens (token → role): the cluster's own, also
	// accepted with Keystone. The peer token is none of them (Peers).
	Tokens map[string]core.Role
	// Keystone, when set, validates every other token (X-Auth-Token);
	// callers then act within their Keystone project.
	Keystone core.TokenValidator
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Gatherer prometheus.Gatherer
	// OnLeave is called (in the background) by POST /v1/agent/leave.
	OnLeave func()
	// WriteTimeout bounds a write's proposal (default 10 s).
	WriteTimeout time.Duration
	// Operator serves the operator endpoints (gossip keyring; nil: 501).
	Operator admin.Operator
	// Limits bound request bodies and each client's write rate.
	Limits core.Limits
	// MetricsRequireAuth makes /metrics need a reader token.
	MetricsRequireAuth bool
	// BaremetalNodes is the Ironic of the os-baremetal-nodes proxy (nil: 404).
	BaremetalNodes nova.BaremetalNodes
	// Images, when set ([glance]), checks that a boot's or rebuild's
	// imageRef is an active Glance image.
	Images nova.ImageService
	// Networks, when set ([neutron]), checks a boot's networks and ports
	// in Neutron.
	Networks nova.NetworkService
	// NoInstancePassword turns off [DEFAULT] enable_instance_password:
	// creates and rebuilds answer no adminPass.
	NoInstancePassword bool
	// Peers authenticates the peers' endpoints (nil: every request to
	// them is refused).
	Peers core.Peers
}

// Server is corral's HTTP API: the server core with every surface's
// handlers mounted by the route table.
type Server struct {
	core      *core.Server
	c         core.Cluster
	nova      *nova.Handlers
	placement *placement.Handlers
	admin     *admin.Handlers
	// document is the OpenAPI document of the admin API (openapi.go).
	document map[string]any
}

// New builds the API for one peer.
func New(cfg Config, c core.Cluster) (*Server, error) {
	srv, err := core.NewServer(core.Config{Tokens: cfg.Tokens, Keystone: cfg.Keystone, Peers: cfg.Peers,
		Logger: cfg.Logger, Registry: cfg.Registry, Gatherer: cfg.Gatherer, Limits: cfg.Limits,
		MetricsRequireAuth: cfg.MetricsRequireAuth}, c.Store)
	if err != nil {
		return nil, err
	}
	s := newServer(cfg, c)
	s.core = srv
	s.mount()
	return s, nil
}

// newServer makes every surface's handlers, without the server core.
func newServer(cfg Config, c core.Cluster) *Server {
	st := &core.State{Cluster: c, WriteTimeout: cfg.WriteTimeout}
	return &Server{c: c,
		nova: nova.New(st, nova.Config{Images: cfg.Images, Networks: cfg.Networks, BaremetalNodes: cfg.BaremetalNodes, NoInstancePassword: cfg.NoInstancePassword,
			Logger: cfg.Logger}),
		placement: placement.New(st),
		admin:     admin.New(st, admin.Config{OnLeave: cfg.OnLeave, Operator: cfg.Operator}),
	}
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.core.Handler() }
