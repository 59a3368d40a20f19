package main

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// Default names of the files `corral tls` writes.
const (
	caCertFile = "corral-agent-ca.pem"
	caKeyFile  = "corral-agent-ca-key.pem"
)

func newTLSCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tls", Short: "Make a CA and certificates for the agents' [tls] section"}
	ca := &cobra.Command{Use: "ca", Short: "Manage the cluster's certificate authority"}
	ca.AddCommand(newTLSCACreateCmd())
	cert := &cobra.Command{Use: "cert", Short: "Make certificates signed by the cluster's CA"}
	cert.AddCommand(newTLSCertCreateCmd())
	cmd.AddCommand(ca, cert)
	return cmd
}

func newTLSCACreateCmd() *cobra.Command {
	var dir, cn string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a CA (ECDSA P-256): " + caCertFile + " and " + caKeyFile,
		Long: `Create a certificate authority for one cluster. Give ` + caCertFile + ` to every
agent as [tls] ca_file and to the CLI as CORRAL_CACERT; keep ` + caKeyFile + ` offline:
whoever holds it can make a certificate that joins the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ca, err := tlsutil.NewCA(cn, days)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			certPEM, keyPEM, err := ca.PEM()
			if err != nil {
				return err
			}
			cp, kp := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
			if err := tlsutil.WriteNew(cp, certPEM, 0o644); err != nil {
				return err
			}
			if err := tlsutil.WriteNew(kp, keyPEM, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "==> Saved %s\n==> Saved %s\n", cp, kp)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write the files to")
	cmd.Flags().StringVar(&cn, "common-name", "corral CA", "common name of the CA")
	cmd.Flags().IntVar(&days, "days", 1825, "validity in days")
	return cmd
}

func newTLSCertCreateCmd() *cobra.Command {
	var dir, name, caPath, keyPath string
	var ips, dnsNames []string
	var days int
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a certificate signed by the CA: NAME.pem and NAME-key.pem",
		Long: `Create a peer certificate (it serves the API and raft and dials other peers)
or, with --client, a certificate for the CLI (CORRAL_CLIENT_CERT and
CORRAL_CLIENT_KEY) when the agents set [tls] verify_incoming. A peer's
certificate names the peer NAME (the agent's name) as spiffe://corral/peer/NAME:
only such a certificate speaks raft and reaches the peers' endpoints, and an
agent starts only with one naming it. It must also name the address the others
reach it at: --ip for its bind address (repeatable), --dns for a host name
(repeatable). The certificate always carries NAME and localhost as DNS names
and 127.0.0.1 as an IP.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return &exitError{code: 2, err: fmt.Errorf("--name is required: the peer's name, e.g. --name peer1")}
			}
			ca, err := tlsutil.LoadCAFiles(caPath, keyPath)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("%w (create one with `corral tls ca create`, or set --ca and --ca-key)", err)}
			}
			req := tlsutil.CertRequest{CommonName: name, Client: clientOnly, Days: days,
				DNSNames: append([]string{name, "localhost"}, dnsNames...), IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
			for _, s := range ips {
				ip := net.ParseIP(s)
				if ip == nil {
					return &exitError{code: 2, err: fmt.Errorf("--ip %q is not an IP address", s)}
				}
				req.IPs = append(req.IPs, ip)
			}
			certPEM, keyPEM, err := ca.Sign(req)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			cp, kp := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
			if err := tlsutil.WriteNew(cp, certPEM, 0o644); err != nil {
				return err
			}
			if err := tlsutil.WriteNew(kp, keyPEM, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "==> Using %s and %s\n==> Saved %s\n==> Saved %s\n", caPath, keyPath, cp, kp)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "peer (or client) name: the common name and a DNS name of the certificate")
	f.StringArrayVar(&ips, "ip", nil, "IP address the certificate is valid for (repeatable)")
	f.StringArrayVar(&dnsNames, "dns", nil, "DNS name the certificate is valid for (repeatable)")
	f.BoolVar(&clientOnly, "client", false, "a client certificate for the CLI instead of a peer's (it names no peer: raft and the peers' endpoints refuse it)")
	f.StringVar(&caPath, "ca", caCertFile, "CA certificate")
	f.StringVar(&keyPath, "ca-key", caKeyFile, "CA private key")
	f.StringVar(&dir, "dir", ".", "directory to write the files to")
	f.IntVar(&days, "days", 365, "validity in days")
	return cmd
}
