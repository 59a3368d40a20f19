package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/ironic/sim"
)

func newSimCmd() *cobra.Command {
	c := &cobra.Command{Use: "sim", Short: "Simulators of the services corral talks to"}
	var listen, rc, maxVersion, netIface string
	var nodes, ports int
	var nodeUUIDs []string
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
			switch netIface {
			case "noop", "flat", "neutron":
			default:
				return fmt.Errorf("--network-interface %q: noop, flat or neutron", netIface)
			}
			if ports < 0 {
				return fmt.Errorf("--ports-per-node %d: not negative", ports)
			}
			if len(nodeUUIDs) > nodes {
				return fmt.Errorf("--node-uuids: %d UUIDs for %d nodes", len(nodeUUIDs), nodes)
			}
			for i, u := range nodeUUIDs {
				if uuid.Validate(u) != nil || len(u) != 36 {
					return fmt.Errorf("--node-uuids: %q is not a UUID", u)
				}
				if slices.ContainsFunc(nodeUUIDs[:i], func(v string) bool { return strings.EqualFold(u, v) }) {
					return fmt.Errorf("--node-uuids: %s twice", u)
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			s := sim.New(sim.Options{MaxVersion: maxVersion, DeployDelay: deployDelay, UndeployDelay: deployDelay,
				PowerDelay: powerDelay, Latency: latency, FaultRate: faultRate, NetworkInterfaces: []string{"noop", netIface}})
			defer s.Close()
			if nodes > 0 {
				s.SeedWiredNodesAs(nodeUUIDs, nodes, rc, netIface, ports)
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
	f.StringVar(&netIface, "network-interface", "noop", "network interface of the enrolled nodes (and enabled): noop (VIFs accepted, not listed), flat or neutron (each VIF takes a free port of the node, as in Ironic)")
	f.StringSliceVar(&nodeUUIDs, "node-uuids", nil, "UUIDs of the first enrolled nodes, comma-separated (the rest random): e.g. the hosts a Neutron has a \"Baremetal Node\" agent for, whose ports it binds")
	f.IntVar(&ports, "ports-per-node", 0, "physical ports (NICs, distinct MACs) of each enrolled node: with flat or neutron, the VIFs a node can take")
	f.StringVar(&maxVersion, "max-version", "1.82", "highest microversion (below 1.52 there are no allocations)")
	f.DurationVar(&deployDelay, "deploy-delay", 0, "time a deploy or undeploy takes")
	f.DurationVar(&powerDelay, "power-delay", 0, "time a power state change takes")
	f.DurationVar(&latency, "latency", 0, "latency added to every request")
	f.Float64Var(&faultRate, "fault-rate", 0, "share of requests failing with 503")
	c.AddCommand(ironicCmd)
	return c
}
