package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
)

func newDevCmd() *cobra.Command {
	var peers, httpPort int
	var baseIP, dataDir, logLevel string
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
			if peers < 1 || peers > 9 {
				return &exitError{code: 2, err: fmt.Errorf("--peers %d must be between 1 and 9", peers)}
			}
			token := os.Getenv("CORRAL_ADMIN_TOKEN")
			if token == "" {
				b := make([]byte, 16)
				_, _ = rand.Read(b)
				token = "dev-" + hex.EncodeToString(b)
			}
			if dataDir == "" {
				d, err := os.MkdirTemp("", "corral-dev-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dataDir = d
			}
			logger := newLogger(logLevel, "text", os.Stderr)
			var agents []*agent
			stopAll := func() error {
				var errs []error
				for _, a := range agents {
					errs = append(errs, a.stop())
				}
				return errors.Join(errs...)
			}
			var seed string
			for i := 0; i < peers; i++ {
				addr := net.IPv4(ip[0], ip[1], ip[2], ip[3]+byte(i)).String()
				cfg := defaultAgentConfig()
				cfg.Name = fmt.Sprintf("corral-%d", i+1)
				cfg.DataDir = filepath.Join(dataDir, cfg.Name)
				cfg.Bind = addr
				cfg.HTTPPort = httpPort
				cfg.RaftPort = httpPort + 1
				cfg.GossipPort = httpPort + 2
				cfg.BootstrapExpect = peers
				cfg.AdminTokens = []string{token}
				cfg.LogLevel = logLevel
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
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "corral dev: %d peers up (data in %s)\n", peers, dataDir)
			for _, a := range agents {
				fmt.Fprintf(out, "  %-9s http://%s\n", a.cfg.Name, a.cfg.apiAddr())
			}
			fmt.Fprintf(out, "\nexport CORRAL_ADDR=%s\nexport CORRAL_TOKEN=%s\n\nthen try: corral members; corral flavor list. Ctrl-C stops the cluster.\n", first, token)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			fmt.Fprintln(out, "\nstopping")
			return stopAll()
		},
	}
	f := cmd.Flags()
	f.IntVar(&peers, "peers", 3, "number of peers")
	f.StringVar(&baseIP, "base-ip", "127.0.0.2", "address of the first peer; the next ones count up")
	f.IntVar(&httpPort, "http-port", defaultHTTPPort, "API port of every peer (raft +1, gossip +2)")
	f.StringVar(&dataDir, "data-dir", "", "keep data here instead of a temporary directory")
	f.StringVar(&logLevel, "log-level", "warn", "log level of the peers")
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
