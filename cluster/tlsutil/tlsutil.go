// Package tlsutil loads and checks a peer's [tls] files (CA, certificate,
// key) and builds the tls.Configs of the API, the raft transport and
// peer forwarding from them. It also makes a CA and certificates signed by
// it (`corral tls ca create`, `corral tls cert create`).
//
// Every error names the file at fault and what is wrong with it, so that
// an agent refuses bad input at start with a message an operator can act
// on. tlsutil imports only the standard library.
package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// Files are the [tls] section of an agent's configuration, with the names
// Consul uses.
type Files struct {
	CAFile   string
	CertFile string
	KeyFile  string
	// VerifyIncoming makes the API require a client certificate signed
	// by the CA. Raft always requires one when TLS is on.
	VerifyIncoming bool
	// VerifyOutgoing makes this peer verify the certificate of the peer it
	// forwards to against the CA (the default; off only to debug).
	VerifyOutgoing bool
}

// Enabled reports whether any TLS file is configured.
func (f Files) Enabled() bool { return f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" }

// Config is a loaded and checked set of TLS files.
type Config struct {
	files Files
	roots *x509.CertPool
	cert  tls.Certificate
	leaf  *x509.Certificate
	name  string // the peer the certificate names
}

func bad(file, path, format string, args ...any) error {
	return fmt.Errorf("%w: [tls] %s %s: %s", ErrBadFile, file, path, fmt.Sprintf(format, args...))
}

// Load reads and checks f: all three files must be set; the CA file must
// hold at least one CA certificate; the key must match the certificate;
// the certificate must be valid now, signed by the CA, and name a peer
// (PeerURI): a client certificate, or one made before corral named peers
// in their certificates, is refused with the command that reissues it.
func Load(f Files) (*Config, error) {
	var errs []error
	if f.CAFile == "" {
		errs = append(errs, fmt.Errorf("%w: [tls] ca_file is not set: TLS needs the CA, the certificate and its key", ErrBadFile))
	}
	if f.CertFile == "" {
		errs = append(errs, fmt.Errorf("%w: [tls] cert_file is not set: TLS needs the CA, the certificate and its key", ErrBadFile))
	}
	if f.KeyFile == "" {
		errs = append(errs, fmt.Errorf("%w: [tls] key_file is not set: TLS needs the CA, the certificate and its key", ErrBadFile))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	roots, err := LoadCA(f.CAFile)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(f.CertFile)
	if err != nil {
		return nil, bad("cert_file", f.CertFile, "cannot read it: %v", err)
	}
	keyPEM, err := os.ReadFile(f.KeyFile)
	if err != nil {
		return nil, bad("key_file", f.KeyFile, "cannot read it: %v", err)
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return nil, bad("cert_file", f.CertFile, "holds no PEM CERTIFICATE block")
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" && b.Type != "EC PRIVATE KEY" && b.Type != "RSA PRIVATE KEY" {
		return nil, bad("key_file", f.KeyFile, "holds no PEM private key block")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: [tls] cert_file %s and key_file %s do not form a key pair: %v", ErrBadFile, f.CertFile, f.KeyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, bad("cert_file", f.CertFile, "cannot parse the certificate: %v", err)
	}
	now := time.Now()
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return nil, bad("cert_file", f.CertFile, "the certificate is valid only from %s to %s", leaf.NotBefore.Format(time.RFC3339), leaf.NotAfter.Format(time.RFC3339))
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, fmt.Errorf("%w: [tls] cert_file %s is not signed by the CA in ca_file %s: %v", ErrBadFile, f.CertFile, f.CAFile, err)
	}
	name, err := PeerName(leaf)
	if err != nil {
		return nil, bad("cert_file", f.CertFile, "the certificate names no peer (%v), so peers of this version refuse it on raft and on their endpoints: "+
			"reissue it with `corral tls cert create --name NAME --ip ADDRESS` (NAME: the agent's name), without --client", err)
	}
	return &Config{files: f, roots: roots, cert: cert, leaf: leaf, name: name}, nil
}

// LoadCA reads a PEM file of CA certificates into a pool.
func LoadCA(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, bad("ca_file", path, "cannot read it: %v", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := raw; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, bad("ca_file", path, "cannot parse a certificate: %v", err)
		}
		if !c.IsCA {
			return nil, bad("ca_file", path, "certificate %q is not a CA certificate", c.Subject.CommonName)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, bad("ca_file", path, "holds no PEM CERTIFICATE block")
	}
	return pool, nil
}

// Files returns the files c was loaded from.
func (c *Config) Files() Files { return c.files }

// PeerName is the peer this peer's certificate names: the agent's name.
func (c *Config) PeerName() string { return c.name }

// NotAfter is when this peer's certificate expires.
func (c *Config) NotAfter() time.Time { return c.leaf.NotAfter }

// APIServer is the API's server config: a client certificate signed by
// the CA is required when VerifyIncoming is set, else verified if sent.
func (c *Config) APIServer() *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if c.files.VerifyIncoming {
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c.cert}, ClientCAs: c.roots, ClientAuth: auth}
}

// PeerServer is the raft transport's server config: mutual TLS, the
// client's certificate must be signed by the CA and name a peer (a client
// certificate is refused); PeerOf on the connection tells which.
func (c *Config) PeerServer() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{c.cert}, ClientCAs: c.roots,
		ClientAuth: tls.RequireAndVerifyClientCert, VerifyConnection: verifyPeer("")}
}

// PeerClient is the config this peer dials other peers with (raft and
// forwarding): it presents its certificate and verifies that the other
// end holds a peer's certificate from the CA. serverName is the host
// dialed (an IP or a name that the certificate carries). Raft always
// verifies; forwarding skips the check only when VerifyOutgoing is off.
func (c *Config) PeerClient(serverName string, verify bool) *tls.Config {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c.cert}, RootCAs: c.roots,
		ServerName: serverName, InsecureSkipVerify: !verify} // #nosec G402 -- only when an operator turns verify_outgoing off
	if verify {
		tc.VerifyConnection = verifyPeer("")
	}
	return tc
}

// PeerClientFor is PeerClient for dialing one known peer: the other end's
// certificate must name peer.
func (c *Config) PeerClientFor(serverName, peer string) *tls.Config {
	tc := c.PeerClient(serverName, true)
	tc.VerifyConnection = verifyPeer(peer)
	return tc
}

// ForwardClient is the config of peer forwarding over the API: the host
// name comes from each request's address.
func (c *Config) ForwardClient() *tls.Config {
	return c.PeerClient("", c.files.VerifyOutgoing)
}
