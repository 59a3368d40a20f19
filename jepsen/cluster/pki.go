package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
)

// PKI is the run's certificate authority and certificates, made with the
// corral binary's own `corral tls` commands as an operator would.
type PKI struct {
	Dir        string
	CA         string            // corral-agent-ca.pem
	Certs      map[string]string // agent name → NAME.pem
	Keys       map[string]string // agent name → NAME-key.pem
	ClientCert string            // the suite's client certificate (verify_incoming)
	ClientKey  string
}

// clientName is the common name of the suite's client certificate.
const clientName = "jepsen-client"

// MakePKI creates a CA in dir, a certificate for each agent naming its
// address, and a client certificate; each agent's key is given to the
// agent's uid (mode 0600 stays as `corral tls` wrote it).
func MakePKI(ctx context.Context, bin, dir string, agents []*Agent) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := CLI(ctx, bin, dir, nil, "tls", "ca", "create", "--dir", dir); err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: filepath.Join(dir, "corral-agent-ca.pem"), Certs: map[string]string{}, Keys: map[string]string{}}
	for _, a := range agents {
		if _, err := CLI(ctx, bin, dir, nil, "tls", "cert", "create", "--name", a.Name, "--ip", a.IP, "--dir", dir); err != nil {
			return nil, err
		}
		p.Certs[a.Name] = filepath.Join(dir, a.Name+".pem")
		p.Keys[a.Name] = filepath.Join(dir, a.Name+"-key.pem")
		if a.UID != 0 {
			if err := os.Chown(p.Keys[a.Name], a.UID, a.UID); err != nil {
				return nil, err
			}
		}
	}
	if _, err := CLI(ctx, bin, dir, nil, "tls", "cert", "create", "--name", clientName, "--client", "--dir", dir); err != nil {
		return nil, err
	}
	p.ClientCert = filepath.Join(dir, clientName+".pem")
	p.ClientKey = filepath.Join(dir, clientName+"-key.pem")
	return p, nil
}

// ClientTLS is the suite's TLS configuration: it trusts only the run's CA
// and presents the client certificate.
func (p *PKI) ClientTLS() (*tls.Config, error) {
	ca, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", p.CA)
	}
	cert, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// CLIEnv is the environment the corral CLI needs to reach the agents.
func (p *PKI) CLIEnv() []string {
	if p == nil {
		return nil
	}
	return []string{"CORRAL_CACERT=" + p.CA, "CORRAL_CLIENT_CERT=" + p.ClientCert, "CORRAL_CLIENT_KEY=" + p.ClientKey}
}
