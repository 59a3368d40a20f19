package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/wire"
)

func newDevCmd() *cobra.Command {
	var peers, hypervisors, httpPort, nodes int
	var baseIP, dataDir, logLevel, ironicURL string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local development cluster of peers on 127.0.0.x in one process",
		Long: `Run a local cluster of --peers agents in this process, bound to 127.0.0.2,
127.0.0.3, ... (every 127.x address is loopback on Linux). It prints the API
addresses and an admin token, and stops everything on Ctrl-C. Data lives in a
temporary directory unless --data-dir is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ip := net.ParseIP(baseIP).To4()
			if ip == nil {
				return &exitError{code: 2, err: fmt.Errorf("--base-ip %q is not an IPv4 address", baseIP)}
			}
			if peers < 1 || peers+hypervisors > 9 || hypervisors < 0 {
				return &exitError{code: 2, err: fmt.Errorf("--peers %d plus --hypervisors %d must be between 1 and 9", peers, hypervisors)}
			}
			token := os.Getenv("CORRAL_ADMIN_TOKEN")
			if token == "" {
				token = "dev-" + randomHex()
			}
			// The peers' own secret: no user ever sees it.
			peerToken := "dev-peer-" + randomHex()
			if dataDir == "" {
				d, err := os.MkdirTemp("", "corral-dev-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dataDir = d
			}
			logger := newLogger(logLevel, "text", os.Stderr)
			if ironicURL == "" {
				url, stopSim, err := startDevSimulator(nodes)
				if err != nil {
					return err
				}
				defer stopSim()
				ironicURL = url
			}
			var agents []*agent
			stopAll := func() error {
				var errs []error
				for _, a := range agents {
					errs = append(errs, a.stop())
				}
				return errors.Join(errs...)
			}
			var seed string
			for i := 0; i < peers+hypervisors; i++ {
				addr := net.IPv4(ip[0], ip[1], ip[2], ip[3]+byte(i)).String()
				cfg := defaultAgentConfig()
				cfg.Name = fmt.Sprintf("corral-%d", i+1)
				if i >= peers {
					cfg.Name = fmt.Sprintf("hv-%d", i-peers+1)
					cfg.Kind = fsm.KindHypervisor
				}
				cfg.DataDir = filepath.Join(dataDir, cfg.Name)
				cfg.Bind = addr
				cfg.HTTPPort = httpPort
				cfg.RaftPort = httpPort + 1
				cfg.GossipPort = httpPort + 2
				cfg.BootstrapExpect = peers + hypervisors
				cfg.AdminTokens = []string{token}
				cfg.PeerToken = peerToken
				cfg.LogLevel = logLevel
				cfg.Ironic.URL = ironicURL
				cfg.Ironic.SyncInterval = 2 * time.Second
				// A bare-metal flavor's vCPUs and memory are a whole machine's
				// (bm-gold: 64 and 128 GiB): Nova's default cores and ram
				// quotas (20, 51200 MiB) would refuse its first boot, as they
				// do in Nova until an operator raises them. The local cluster
				// keeps the instances quota and lifts those two.
				cfg.Quota[fsm.QuotaCores], cfg.Quota[fsm.QuotaRAM] = fsm.QuotaUnlimited, fsm.QuotaUnlimited
				if seed != "" {
					cfg.Join = []string{seed}
				}
				seed = net.JoinHostPort(addr, fmt.Sprint(cfg.GossipPort))
				if err := cfg.validate(); err != nil {
					_ = stopAll()
					return err
				}
				a, err := startAgent(cfg, logger)
				if err != nil {
					_ = stopAll()
					return err
				}
				agents = append(agents, a)
			}
			first := "http://" + agents[0].cfg.apiAddr()
			if err := waitReady(first, token, 30*time.Second); err != nil {
				_ = stopAll()
				return err
			}
			if err := createDevFlavors(first, token); err != nil {
				_ = stopAll()
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "corral dev: %d ironic peers and %d hypervisor peers up (data in %s), Ironic at %s\n", peers, hypervisors, dataDir, ironicURL)
			for _, a := range agents {
				fmt.Fprintf(out, "  %-9s http://%s\n", a.cfg.Name, a.cfg.apiAddr())
			}
			fmt.Fprintf(out, "\nexport CORRAL_ADDR=%s\nexport CORRAL_TOKEN=%s\n\nthen try: corral members; corral server create --flavor bm-gold --image img demo1;\ncorral server list; corral node list; corral host list. Ctrl-C stops the cluster.\n", first, token)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			fmt.Fprintln(out, "\nstopping")
			return stopAll()
		},
	}
	f := cmd.Flags()
	f.IntVar(&peers, "peers", 3, "number of ironic peers (bare-metal compute hosts)")
	f.IntVar(&hypervisors, "hypervisors", 1, "number of hypervisor peers (VMs recorded by the vmrecord driver, no hypervisor behind them)")
	f.StringVar(&baseIP, "base-ip", "127.0.0.2", "address of the first peer; the next ones count up")
	f.IntVar(&httpPort, "http-port", defaultHTTPPort, "API port of every peer (raft +1, gossip +2)")
	f.StringVar(&dataDir, "data-dir", "", "keep data here instead of a temporary directory")
	f.StringVar(&logLevel, "log-level", "warn", "log level of the peers")
	f.StringVar(&ironicURL, "ironic-url", "", "use this Ironic instead of the embedded simulator")
	f.IntVar(&nodes, "nodes", 16, "simulated nodes per resource class (baremetal-gold, baremetal-silver)")
	return cmd
}

// waitReady polls /readyz until it answers 200.
func waitReady(addr, token string, timeout time.Duration) error {
	c := client.New(addr, token)
	c.HTTP.Timeout = 2 * time.Second
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		var body string
		if last = c.Do(context.Background(), "GET", "/readyz", nil, &body); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cluster not ready after %s: %w", timeout, last)
}

// startDevSimulator serves the Ironic simulator on 127.0.0.1 with nodes of
// two resource classes.
func startDevSimulator(perClass int) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the Ironic simulator: %w", err)
	}
	s := sim.New(sim.Options{DeployDelay: 300 * time.Millisecond, UndeployDelay: 300 * time.Millisecond})
	s.SeedNodes(perClass, "baremetal-gold")
	s.SeedNodes(perClass, "baremetal-silver")
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		s.Close()
	}, nil
}

// devFlavors match the simulator's resource classes, zeroing the standard
// classes as a bare-metal flavor should.
var devFlavors = []struct {
	name, class      string
	vcpus, ram, disk int
}{
	{"bm-gold", "CUSTOM_BAREMETAL_GOLD", 64, 131072, 371},
	{"bm-silver", "CUSTOM_BAREMETAL_SILVER", 16, 32768, 200},
}

func createDevFlavors(addr, token string) error {
	c := client.New(addr, token)
	ctx := context.Background()
	create := func(name string, vcpus, ram, disk int) error {
		_, err := c.CreateFlavor(ctx, wire.FlavorCreate{Name: new(name), ID: new(name), VCPUs: new(vcpus), RAM: new(ram), Disk: new(disk)})
		if err != nil && !client.IsStatus(err, http.StatusConflict) {
			return fmt.Errorf("create flavor %s: %w", name, err)
		}
		return nil
	}
	for _, f := range devFlavors {
		if err := create(f.name, f.vcpus, f.ram, f.disk); err != nil {
			return err
		}
		specs := map[string]string{"resources:" + f.class: "1",
			"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
		if err := c.SetFlavorExtraSpecs(ctx, f.name, specs); err != nil {
			return fmt.Errorf("set properties of flavor %s: %w", f.name, err)
		}
	}
	return create("vm-tiny", 1, 1024, 1)
}

// randomHex is 16 random bytes in hex, for the tokens of a dev cluster.
func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
