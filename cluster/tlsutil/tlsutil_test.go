package tlsutil_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// pki writes a CA and one peer certificate for 127.0.0.1 into dir.
func pki(t *testing.T, dir, name string) (ca *tlsutil.CA, files tlsutil.Files) {
	t.Helper()
	ca, err := tlsutil.NewCA(name+" CA", 30)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _, err := ca.PEM()
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Sign(tlsutil.CertRequest{CommonName: name, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}, Days: 10})
	if err != nil {
		t.Fatal(err)
	}
	files = tlsutil.Files{CAFile: filepath.Join(dir, name+"-ca.pem"), CertFile: filepath.Join(dir, name+".pem"), KeyFile: filepath.Join(dir, name+"-key.pem"), VerifyOutgoing: true}
	for p, b := range map[string][]byte{files.CAFile: caPEM, files.CertFile: cert, files.KeyFile: key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ca, files
}

func TestLoadGood(t *testing.T) {
	_, f := pki(t, t.TempDir(), "peer1")
	c, err := tlsutil.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.NotAfter().IsZero() {
		t.Fatal("no expiry")
	}
}

func TestLoadRefusesBadFilesNamingThem(t *testing.T) {
	dir := t.TempDir()
	_, good := pki(t, dir, "a")
	_, other := pki(t, dir, "b")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a pem file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    tlsutil.Files
		want []string
	}{
		{"missing settings", tlsutil.Files{CertFile: good.CertFile}, []string{"ca_file is not set", "key_file is not set"}},
		{"unreadable CA", tlsutil.Files{CAFile: filepath.Join(dir, "nope.pem"), CertFile: good.CertFile, KeyFile: good.KeyFile}, []string{"ca_file", "nope.pem", "cannot read"}},
		{"malformed CA", tlsutil.Files{CAFile: garbage, CertFile: good.CertFile, KeyFile: good.KeyFile}, []string{"ca_file " + garbage, "no PEM CERTIFICATE"}},
		{"CA is a leaf", tlsutil.Files{CAFile: good.CertFile, CertFile: good.CertFile, KeyFile: good.KeyFile}, []string{"ca_file " + good.CertFile, "not a CA certificate"}},
		{"malformed cert", tlsutil.Files{CAFile: good.CAFile, CertFile: garbage, KeyFile: good.KeyFile}, []string{"cert_file " + garbage, "no PEM CERTIFICATE"}},
		{"malformed key", tlsutil.Files{CAFile: good.CAFile, CertFile: good.CertFile, KeyFile: garbage}, []string{"key_file " + garbage, "no PEM private key"}},
		{"key of another cert", tlsutil.Files{CAFile: good.CAFile, CertFile: good.CertFile, KeyFile: other.KeyFile}, []string{good.CertFile, other.KeyFile, "do not form a key pair"}},
		{"wrong CA", tlsutil.Files{CAFile: other.CAFile, CertFile: good.CertFile, KeyFile: good.KeyFile}, []string{"cert_file " + good.CertFile, "not signed by the CA in ca_file " + other.CAFile}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tlsutil.Load(tc.f)
			if !errors.Is(err, tlsutil.ErrBadFile) {
				t.Fatalf("got %v, want ErrBadFile", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// handshake runs a server with srv and dials it with cli; it returns the
// client's error (nil when a byte made the round trip).
func handshake(t *testing.T, srv, cli *tls.Config) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		if _, err := c.Read(b); err == nil {
			_, _ = c.Write(b)
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte{7}); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 1))
	return err
}

func TestPeerMutualTLS(t *testing.T) {
	dir := t.TempDir()
	_, fa := pki(t, dir, "a")
	_, fb := pki(t, dir, "b")
	a, err := tlsutil.Load(fa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tlsutil.Load(fb)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, a.PeerServer(), a.PeerClient("127.0.0.1", true)); err != nil {
		t.Fatalf("same CA: %v", err)
	}
	if err := handshake(t, a.PeerServer(), b.PeerClient("127.0.0.1", true)); err == nil {
		t.Fatal("a client from another CA was let in")
	}
	// A client without any certificate is refused by the peer listener.
	noCert := &tls.Config{RootCAs: a.PeerClient("", true).RootCAs, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	if err := handshake(t, a.PeerServer(), noCert); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
	// The API lets it in unless verify_incoming is set.
	if err := handshake(t, a.APIServer(), noCert); err != nil {
		t.Fatalf("API without verify_incoming refused a client without certificate: %v", err)
	}
	fa.VerifyIncoming = true
	strict, err := tlsutil.Load(fa)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, strict.APIServer(), noCert); err == nil {
		t.Fatal("API with verify_incoming let in a client without certificate")
	}
}

func TestClientCertCannotServe(t *testing.T) {
	dir := t.TempDir()
	ca, f := pki(t, dir, "a")
	cert, key, err := ca.Sign(tlsutil.CertRequest{CommonName: "cli", Client: true, Days: 1, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	f.CertFile, f.KeyFile = filepath.Join(dir, "cli.pem"), filepath.Join(dir, "cli-key.pem")
	if err := tlsutil.WriteNew(f.CertFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tlsutil.WriteNew(f.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tlsutil.WriteNew(f.KeyFile, key, 0o600); err == nil {
		t.Fatal("WriteNew overwrote a file")
	}
	// An agent does not start with a client certificate.
	if _, err := tlsutil.Load(f); !errors.Is(err, tlsutil.ErrBadFile) || !strings.Contains(err.Error(), "names no peer") {
		t.Fatalf("a client certificate loaded as a peer's: %v", err)
	}
	// Nor can one serve TLS to a peer.
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := tlsutil.LoadCA(f.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}}
	cli := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "127.0.0.1"}
	if err := handshake(t, srv, cli); err == nil {
		t.Fatal("a client-only certificate served a TLS connection")
	}
}

func TestLoadCAFiles(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pki(t, dir, "a")
	c, k, err := ca.PEM()
	if err != nil {
		t.Fatal(err)
	}
	cp, kp := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	_ = os.WriteFile(cp, c, 0o600)
	_ = os.WriteFile(kp, k, 0o600)
	back, err := tlsutil.LoadCAFiles(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) {
		t.Fatal("CA changed through PEM")
	}
	other, _ := pki(t, dir, "b")
	_, ok, _ := other.PEM()
	_ = os.WriteFile(kp, ok, 0o600)
	if _, err := tlsutil.LoadCAFiles(cp, kp); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Fatalf("mismatched CA key: %v", err)
	}
}
