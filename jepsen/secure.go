package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
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

// corralCmd runs the corral binary in dir and returns its stdout; the
// error carries its stderr.
func corralCmd(ctx context.Context, bin, dir string, env []string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("corral %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// MakePKI creates a CA in dir, a certificate for each agent naming its
// address, and a client certificate; each agent's key is given to the
// agent's uid (mode 0600 stays as `corral tls` wrote it).
func MakePKI(ctx context.Context, bin, dir string, agents []*Agent) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := corralCmd(ctx, bin, dir, nil, "tls", "ca", "create", "--dir", dir); err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: filepath.Join(dir, "corral-agent-ca.pem"), Certs: map[string]string{}, Keys: map[string]string{}}
	for _, a := range agents {
		if _, err := corralCmd(ctx, bin, dir, nil, "tls", "cert", "create", "--name", a.Name, "--ip", a.IP, "--dir", dir); err != nil {
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
	if _, err := corralCmd(ctx, bin, dir, nil, "tls", "cert", "create", "--name", clientName, "--client", "--dir", dir); err != nil {
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

// AgentConfig is what goes into an agent's configuration file beyond its
// command line: TLS, the gossip key, Keystone.
type AgentConfig struct {
	CA, Cert, Key string // empty: no TLS
	GossipKey     string // empty: gossip in clear
	Keystone      *Keystone
	PeerToken     string
}

// INI renders the configuration file. Sections are written in a fixed
// order so that the file is reproducible.
func (c AgentConfig) INI() string {
	sections := map[string][][2]string{}
	if c.Cert != "" {
		sections["tls"] = [][2]string{{"ca_file", c.CA}, {"cert_file", c.Cert}, {"key_file", c.Key},
			{"verify_incoming", "true"}, {"verify_outgoing", "true"}}
	}
	if c.GossipKey != "" {
		sections["gossip"] = [][2]string{{"encrypt", c.GossipKey}}
	}
	if ks := c.Keystone; ks != nil {
		sections["auth"] = [][2]string{{"strategy", "keystone"}, {"peer_token", c.PeerToken}}
		sections["keystone_authtoken"] = [][2]string{{"auth_url", ks.AuthURL}, {"www_authenticate_uri", ks.AuthURL},
			{"username", ks.ServiceUser}, {"password", ks.ServicePassword}, {"project_name", ks.ServiceProject},
			{"user_domain_name", "Default"}, {"project_domain_name", "Default"}, {"token_cache_time", "300"}}
	}
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, s := range names {
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, kv := range sections[s] {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeFileAtomic replaces path with data (mode 0600, owned by uid when
// not 0), so that an agent starting meanwhile reads the old or the new
// file, never half of one.
func writeFileAtomic(path string, data []byte, uid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if uid != 0 {
		if err := os.Chown(tmp, uid, uid); err != nil {
			return err
		}
	}
	return os.Rename(tmp, path)
}
