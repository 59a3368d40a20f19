package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// serveTLS accepts TLS connections with cert (client certificates from
// ca required) and completes each handshake, until the test ends.
func serveTLS(t *testing.T, ca *tlsutil.CA, cert tls.Certificate) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// With TLS, the leader admits a gossip member only when the raft address
// it advertises presents a peer certificate that names that member.
func TestAdmissionChecksTheCertificateNamesTheMember(t *testing.T) {
	ca, err := tlsutil.NewCA("cluster", 1)
	if err != nil {
		t.Fatal(err)
	}
	a := newAdmission(&Node{cfg: Config{TLS: loadPeer(t, ca, "leader")}})
	for _, tc := range []struct {
		what   string
		cert   tls.Certificate
		member string
		ok     bool
	}{
		{"its own peer certificate", signed(t, ca, "b", false), "b", true},
		{"another peer's certificate", signed(t, ca, "c", false), "b", false},
		{"a client certificate", signed(t, ca, "b", true), "b", false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := a.dial(ctx, serveTLS(t, ca, tc.cert), tc.member)
		cancel()
		if (err == nil) != tc.ok {
			t.Errorf("member %s presenting %s: admitted %v (%v), want %v", tc.member, tc.what, err == nil, err, tc.ok)
		}
	}
}

func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.2:7482", "127.0.0.2:7481", true},
		{"127.0.0.9:7482", "127.0.0.2:7481", false},
		{"127.0.0.2:7482", "p1", true}, // an in-memory raft address
	} {
		if got := sameHost(tc.a, tc.b); got != tc.want {
			t.Errorf("sameHost(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
