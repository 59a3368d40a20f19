package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/ironic/sim"
)

func newSimCmd() *cobra.Command {
	c := &cobra.Command{Use: "sim", Short: "Simulators of the services corral talks to"}
	var listen, rc, maxVersion string
	var nodes int
	var deployDelay, powerDelay, latency time.Duration
	var faultRate float64
	ironicCmd := &cobra.Command{
		Use:   "ironic",
		Short: "Run the embedded Ironic simulator as its own process",
		Long: `Serve the embedded Ironic simulator (the same REST subset as Ironic: nodes,
states, traits, VIFs, ports, allocations, microversions) with --nodes enrolled,
available, powered-off nodes of --resource-class. For multi-process tests and
for trying corral without an Ironic.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			s := sim.New(sim.Options{MaxVersion: maxVersion, DeployDelay: deployDelay, UndeployDelay: deployDelay,
				PowerDelay: powerDelay, Latency: latency, FaultRate: faultRate})
			defer s.Close()
			if nodes > 0 {
				s.SeedNodes(nodes, rc)
			}
			srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "http://%s\n", ln.Addr())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := ironicCmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:6385", "address to serve on (port 0 picks one; the URL is printed)")
	f.IntVar(&nodes, "nodes", 10, "nodes to enroll, available and powered off")
	f.StringVar(&rc, "resource-class", "baremetal", "resource class of the enrolled nodes")
	f.StringVar(&maxVersion, "max-version", "1.82", "highest microversion (below 1.52 there are no allocations)")
	f.DurationVar(&deployDelay, "deploy-delay", 0, "time a deploy or undeploy takes")
	f.DurationVar(&powerDelay, "power-delay", 0, "time a power state change takes")
	f.DurationVar(&latency, "latency", 0, "latency added to every request")
	f.Float64Var(&faultRate, "fault-rate", 0, "share of requests failing with 503")
	c.AddCommand(ironicCmd)
	return c
}
