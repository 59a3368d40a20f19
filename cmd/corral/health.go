package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is the container health check: it asks the agent that the
// same configuration describes (file, then environment) for /healthz, or
// /readyz with --ready, and exits 0 when it answers 200, 1 otherwise. An
// image runs it as its HEALTHCHECK, without a shell or curl.
func newHealthCmd() *cobra.Command {
	var ready bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check the local agent's /healthz (or /readyz): exit 0 when it answers 200",
		Long: `Check the agent that the configuration (--config, then CORRAL_* environment
variables, as the agent reads them) describes: GET /healthz, or /readyz with
--ready, on its bind address and API port (127.0.0.1 when it binds every
address), over HTTPS with [tls] ca_file when TLS is on, presenting cert_file
when verify_incoming is on. Exit 0 when it answers 200, 1 otherwise. It needs
no shell: container images use it as their health check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Only the address and the TLS files matter here: a problem
			// elsewhere in the configuration is the agent's to report.
			cfg, _ := loadAgentConfig(cmd.Flags(), os.Getenv)
			host := cfg.Bind
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				host = "127.0.0.1"
			}
			path := "/healthz"
			if ready {
				path = "/readyz"
			}
			hc := &http.Client{Timeout: timeout}
			scheme := "http"
			if cfg.TLS.Enabled() {
				scheme = "https"
				tc, err := healthTLS(cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.VerifyIncoming)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				hc.Transport = &http.Transport{TLSClientConfig: tc}
			}
			url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(cfg.HTTPPort)) + path
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := hc.Do(req)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %w", url, err)}
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: 1, err: fmt.Errorf("%s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", url, resp.Status)
			return err
		},
	}
	cmd.Flags().String("config", "", "the agent's INI configuration file")
	cmd.Flags().BoolVar(&ready, "ready", false, "ask /readyz (raft, gossip and the state ready) instead of /healthz")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// healthTLS trusts the cluster's CA and, when the API requires client
// certificates, presents the peer's own (any certificate of the CA will do).
func healthTLS(caFile, certFile, keyFile string, verifyIncoming bool) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("[tls] ca_file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, errors.New("[tls] ca_file " + caFile + " holds no PEM certificate")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if verifyIncoming {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("[tls] cert_file and key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}
