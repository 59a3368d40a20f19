package tlsutil_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// keyPair signs req with ca and returns it as a tls.Certificate.
func keyPair(t *testing.T, ca *tlsutil.CA, req tlsutil.CertRequest) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Sign(req)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// legacyPeerCert is a peer certificate as corral made them before peers
// were named in a URI SAN: server and client use, no URI.
func legacyPeerCert(t *testing.T, ca *tlsutil.CA, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"corral"}},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{name, "localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func TestPeerCertificateNamesThePeer(t *testing.T) {
	ca, _ := pki(t, t.TempDir(), "a")
	for _, tc := range []struct {
		req  tlsutil.CertRequest
		want string
	}{
		{tlsutil.CertRequest{CommonName: "peer1", Days: 1}, "peer1"},
		{tlsutil.CertRequest{CommonName: "admin", Client: true, Days: 1}, ""},
	} {
		c := keyPair(t, ca, tc.req)
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := tlsutil.PeerName(leaf)
		switch {
		case tc.want == "" && !errors.Is(err, tlsutil.ErrNotPeer):
			t.Errorf("client certificate %s: got peer %q, %v; want ErrNotPeer", tc.req.CommonName, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("peer certificate %s: got %q, %v", tc.req.CommonName, got, err)
		}
	}
	if _, _, err := ca.Sign(tlsutil.CertRequest{CommonName: "a/b", Days: 1}); err == nil {
		t.Error("signed a peer certificate for a name a peer URI cannot carry")
	}
}

// The CLI's client certificate is signed by the cluster's CA, yet the
// listener of raft refuses it: only a peer's certificate may speak raft.
func TestPeerServerRefusesClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, f := pki(t, dir, "a")
	a, err := tlsutil.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	roots := a.PeerClient("127.0.0.1", true).RootCAs
	client := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{keyPair(t, ca, tlsutil.CertRequest{CommonName: "admin", Client: true, Days: 1})}}
	if err := handshake(t, a.PeerServer(), client); err == nil {
		t.Fatal("the raft listener let in a client certificate")
	}
	legacyCert, legacyKey := legacyPeerCert(t, ca, "old")
	old, err := tls.X509KeyPair(legacyCert, legacyKey)
	if err != nil {
		t.Fatal(err)
	}
	client.Certificates = []tls.Certificate{old}
	if err := handshake(t, a.PeerServer(), client); err == nil {
		t.Fatal("the raft listener let in a peer certificate without a peer name")
	}
	client.Certificates = []tls.Certificate{keyPair(t, ca, tlsutil.CertRequest{CommonName: "b", Days: 1})}
	if err := handshake(t, a.PeerServer(), client); err != nil {
		t.Fatalf("a peer's certificate: %v", err)
	}
}

// A peer dialing another checks that it reached a peer, and, when it knows
// whom it dials, that the certificate names that peer.
func TestPeerClientChecksWhomItReached(t *testing.T) {
	dir := t.TempDir()
	ca, f := pki(t, dir, "a")
	a, err := tlsutil.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, a.PeerServer(), a.PeerClientFor("127.0.0.1", "a")); err != nil {
		t.Fatalf("dialing a under its name: %v", err)
	}
	if err := handshake(t, a.PeerServer(), a.PeerClientFor("127.0.0.1", "b")); !errors.Is(err, tlsutil.ErrNotPeer) {
		t.Fatalf("dialing b and reaching a: %v, want ErrNotPeer", err)
	}
	legacyCert, legacyKey := legacyPeerCert(t, ca, "old")
	old, err := tls.X509KeyPair(legacyCert, legacyKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{old}}
	if err := handshake(t, srv, a.PeerClient("127.0.0.1", true)); !errors.Is(err, tlsutil.ErrNotPeer) {
		t.Fatalf("reaching a server without a peer name: %v, want ErrNotPeer", err)
	}
}

// Load refuses a certificate that names no peer, telling the operator to
// reissue it, and one that names another peer than the agent's.
func TestLoadRefusesCertificateWithoutPeerName(t *testing.T) {
	dir := t.TempDir()
	ca, f := pki(t, dir, "a")
	certPEM, keyPEM := legacyPeerCert(t, ca, "old")
	f.CertFile, f.KeyFile = filepath.Join(dir, "old.pem"), filepath.Join(dir, "old-key.pem")
	for p, b := range map[string][]byte{f.CertFile: certPEM, f.KeyFile: keyPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := tlsutil.Load(f)
	if !errors.Is(err, tlsutil.ErrBadFile) {
		t.Fatalf("a certificate without a peer name loaded: %v", err)
	}
	for _, w := range []string{f.CertFile, "names no peer", "corral tls cert create --name"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// A certificate made by this version works with the TLS configurations of
// the versions before it (CA and key usage only), so that certificates can
// be reissued before the binaries are upgraded.
func TestPeerCertificateWorksWithOlderPeers(t *testing.T) {
	dir := t.TempDir()
	_, fa := pki(t, dir, "a")
	a, err := tlsutil.Load(fa)
	if err != nil {
		t.Fatal(err)
	}
	roots := a.PeerClient("", true).RootCAs
	certs := a.PeerServer().Certificates
	olderServer := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: certs, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert}
	olderClient := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: certs, RootCAs: roots, ServerName: "127.0.0.1"}
	if err := handshake(t, olderServer, a.PeerClient("127.0.0.1", true)); err != nil {
		t.Fatalf("this version dialing an older peer: %v", err)
	}
	if err := handshake(t, a.PeerServer(), olderClient); err != nil {
		t.Fatalf("an older peer with a reissued certificate dialing this version: %v", err)
	}
}
