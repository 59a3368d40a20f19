package client

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// Environment variables of the client's TLS files.
const (
	EnvCACert     = "CORRAL_CACERT"
	EnvClientCert = "CORRAL_CLIENT_CERT"
	EnvClientKey  = "CORRAL_CLIENT_KEY"
)

// TLSConfig builds the client's TLS configuration from PEM files: caFile
// holds the CA that signed the agents' certificates (empty: the system's
// roots); certFile and keyFile, set together, are presented to an agent
// whose [tls] verify_incoming requires a client certificate.
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		raw, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA certificate %s (%s): %w", caFile, EnvCACert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw) {
			return nil, fmt.Errorf("CA certificate %s (%s) holds no PEM certificate", caFile, EnvCACert)
		}
		tc.RootCAs = pool
	}
	switch {
	case certFile == "" && keyFile == "":
	case certFile == "" || keyFile == "":
		return nil, fmt.Errorf("set both %s and %s (a client certificate and its key), or neither", EnvClientCert, EnvClientKey)
	default:
		certPEM, err := os.ReadFile(certFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s (%s): %w", certFile, EnvClientCert, err)
		}
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("client key %s (%s): %w", keyFile, EnvClientKey, err)
		}
		if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("client certificate %s (%s) holds no PEM CERTIFICATE block", certFile, EnvClientCert)
		}
		if b, _ := pem.Decode(keyPEM); b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return nil, fmt.Errorf("client key %s (%s) holds no PEM private key block", keyFile, EnvClientKey)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s and key %s do not form a key pair: %w", certFile, keyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// TLSConfigFromEnv reads CORRAL_CACERT, CORRAL_CLIENT_CERT and
// CORRAL_CLIENT_KEY through getenv; it returns nil when none is set.
func TLSConfigFromEnv(getenv func(string) string) (*tls.Config, error) {
	ca, cert, key := getenv(EnvCACert), getenv(EnvClientCert), getenv(EnvClientKey)
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	return TLSConfig(ca, cert, key)
}

// UseTLS makes c speak HTTPS with tc: an http:// address becomes https://
// (an agent with [tls] configured answers only HTTPS).
func (c *Client) UseTLS(tc *tls.Config) error {
	if tc == nil {
		return errors.New("no TLS configuration")
	}
	if rest, ok := strings.CutPrefix(c.Addr, "http://"); ok {
		c.Addr = "https://" + rest
	}
	timeout := 30 * time.Second
	if c.HTTP != nil {
		timeout = c.HTTP.Timeout
	}
	c.HTTP = &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: tc.Clone(), TLSHandshakeTimeout: 10 * time.Second, Proxy: http.ProxyFromEnvironment,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second,
	}}
	return nil
}
