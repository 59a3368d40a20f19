package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron/reaper"
	"github.com/corral-dev/corral/neutron/serverports"
)

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run one corral peer (one compute host)",
		Long: `Run one corral peer: raft, gossip and the HTTP API. Configuration comes from
the INI file given with --config, then CORRAL_<SECTION>_<KEY> environment
variables (CORRAL_<KEY> for [DEFAULT]), then flags. CORRAL_ADMIN_TOKEN adds an
admin token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadAgentConfig(cmd.Flags(), os.Getenv)
			if err != nil {
				return fmt.Errorf("invalid configuration:\n%w", err)
			}
			logger := newLogger(cfg.LogLevel, cfg.LogFormat, os.Stderr)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			a, err := startAgent(cfg, logger)
			if err != nil {
				return err
			}
			return a.wait(ctx)
		},
	}
	registerAgentFlags(cmd.Flags())
	return cmd
}

func newLogger(level, format string, w *os.File) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// agent is one running peer: cluster node plus HTTP server.
type agent struct {
	cfg    agentConfig
	log    *slog.Logger
	node   *cluster.Node
	srv    *http.Server
	served chan error
	left   chan struct{}
	once   sync.Once
	cancel context.CancelFunc
	bg     sync.WaitGroup
	reg    *namedRegistry
}

func startAgent(cfg agentConfig, logger *slog.Logger) (*agent, error) {
	ln, err := net.Listen("tcp", cfg.apiAddr())
	if err != nil {
		return nil, fmt.Errorf("listen for the API on %s: %w (is the port in use? set --http-port)", cfg.apiAddr(), err)
	}
	scheme := "http"
	if cfg.tls != nil {
		ln, scheme = tls.NewListener(ln, cfg.tls.APIServer()), "https"
	}
	reg := newNamedRegistry() // registry.go
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cc := cfg.clusterConfig()
	cc.Logger, cc.Registry, cc.Store = logger, reg, fsm.New()
	logger = logger.With("peer", cfg.Name)
	node, err := cluster.New(cc)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	a := &agent{cfg: cfg, log: logger, node: node, served: make(chan error, 1), left: make(chan struct{}), reg: reg}
	tokens := map[string]core.Role{}
	for _, t := range cfg.ReaderTokens {
		tokens[t] = core.RoleReader
	}
	for _, t := range cfg.AdminTokens {
		tokens[t] = core.RoleAdmin
	}
	// The peer token is no user's credential: only the peers' endpoints
	// take it, through Peers.
	bmSource := newBaremetalSource(cfg.Ironic) // baremetal_proxy.go
	apiCfg := api.Config{Tokens: tokens, Peers: node, Logger: logger, Registry: reg, Gatherer: reg, OnLeave: a.leaveAndExit, Operator: node,
		Limits: cfg.Limits, MetricsRequireAuth: cfg.MetricsRequireAuth, NoInstancePassword: !cfg.EnableInstancePassword}
	if err := a.startAuth(&apiCfg, reg); err != nil {
		_ = node.Shutdown()
		_ = ln.Close()
		return nil, err
	}
	if cfg.ironicEnabled() {
		apiCfg.BaremetalNodes = bmSource
		with := "corral's [ironic] credentials"
		if bmSource.forward {
			with = "the caller's Keystone token (static tokens: corral's [ironic] credentials)"
		}
		logger.Info("os-baremetal-nodes asks Ironic", "with", with)
	}
	if apiCfg.Images, err = a.images(reg); err != nil { // config_glance.go
		_ = node.Shutdown()
		_ = ln.Close()
		return nil, err
	}
	nc, err := a.checkNeutron() // config_neutron.go
	if err != nil {
		_ = node.Shutdown()
		_ = ln.Close()
		return nil, err
	}
	var ports reaper.Neutron // nil without [neutron]: a nil *neutron.Client would not be
	if nc != nil {
		apiCfg.Networks = nc
		ports = nc
	}
	portReap, err := portReaper(cfg.NeutronReap, node, ports, reg, logger) // config_neutron_reap.go
	if err != nil {
		_ = node.Shutdown()
		_ = ln.Close()
		return nil, err
	}
	srv, err := api.New(apiCfg, node)
	if err != nil {
		_ = node.Shutdown()
		_ = ln.Close()
		return nil, err
	}
	a.srv = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { a.served <- a.srv.Serve(ln) }()
	bgctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	if portReap != nil {
		// Every peer with [neutron] runs it; only the leader's acts.
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			portReap.Run(bgctx)
		}()
	}
	var nt serverports.Neutron // nil without [neutron]: a nil *neutron.Client would not be
	if nc != nil {
		nt = nc
	}
	hypervisor := cfg.Kind == fsm.KindHypervisor
	if hypervisor {
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			runHypervisor(bgctx, cfg, node, reg, logger, nt)
		}()
	}
	if cfg.ironicEnabled() {
		// Every peer that knows Ironic keeps the node mirror when it leads;
		// only ironic hosts build bare-metal servers.
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			runIronic(bgctx, cfg.Ironic, !hypervisor, node, reg, logger, bmSource, nt)
		}()
	} else if !hypervisor {
		logger.Warn("no [ironic] url: this host will not build servers")
	}
	logger.Info("API listening", "addr", scheme+"://"+cfg.apiAddr())
	return a, nil
}

// leaveAndExit runs for POST /v1/agent/leave.
func (a *agent) leaveAndExit() {
	a.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.node.Leave(ctx); err != nil {
			a.log.Error("leave failed", "err", err)
		}
		close(a.left)
	})
}

// wait runs until a signal, a leave request or a server failure, then stops.
func (a *agent) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
		a.log.Info("signal received; stopping", "leave_on_terminate", a.cfg.LeaveOnTerminate)
		if a.cfg.LeaveOnTerminate {
			a.leaveAndExit()
		}
	case <-a.left:
	case err = <-a.served:
		err = fmt.Errorf("API server failed: %w", err)
	}
	return errors.Join(err, a.stop())
}

func (a *agent) stop() error {
	// A leader hands over first, while its API still serves the writes
	// followers forward: a planned stop then costs no election timeout.
	if err := a.node.StepDown(); err != nil {
		a.log.Warn("stopping without handing raft leadership over", "err", err)
	}
	a.cancel()
	a.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	herr := a.srv.Shutdown(ctx)
	if errors.Is(herr, http.ErrServerClosed) {
		herr = nil
	}
	return errors.Join(herr, a.node.Shutdown())
}
