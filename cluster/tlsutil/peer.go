package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"
)

// A peer's certificate names the peer in a URI SAN of this form; only
// `corral tls cert create` without --client writes one. A client
// certificate (the CLI's) carries none, so it cannot pass for a peer on
// raft or on the peers' endpoints even though the same CA signed it.
const (
	peerURIScheme = "spiffe"
	peerURIHost   = "corral"
	peerURIPath   = "/peer/"
)

// PeerURI is the URI SAN that names peer name: spiffe://corral/peer/NAME.
func PeerURI(name string) *url.URL {
	return &url.URL{Scheme: peerURIScheme, Host: peerURIHost, Path: peerURIPath + name}
}

// validPeerName reports whether name can be carried in a peer URI as is.
func validPeerName(name string) bool {
	return name != "" && !strings.Contains(name, "/") && url.PathEscape(name) == name
}

// PeerName returns the peer a certificate names; ErrNotPeer when it names
// none (a client certificate, or one made before corral named peers in
// their certificates) or more than one.
func PeerName(c *x509.Certificate) (string, error) {
	var names []string
	for _, u := range c.URIs {
		if u.Scheme == peerURIScheme && u.Host == peerURIHost && strings.HasPrefix(u.Path, peerURIPath) {
			names = append(names, strings.TrimPrefix(u.Path, peerURIPath))
		}
	}
	switch {
	case len(names) == 0:
		return "", fmt.Errorf("%w: certificate %q carries no peer URI (%s)", ErrNotPeer, c.Subject.CommonName, PeerURI("NAME"))
	case len(names) > 1 || !validPeerName(names[0]):
		return "", fmt.Errorf("%w: certificate %q names peers %q; a peer's names exactly one", ErrNotPeer, c.Subject.CommonName, names)
	}
	return names[0], nil
}

// PeerOf returns the peer named by the verified certificate the other end
// of a TLS connection presented: ErrNotPeer when it presented none, its
// chain was not verified against the CA, or the certificate is no peer's.
func PeerOf(cs *tls.ConnectionState) (string, error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", fmt.Errorf("%w: no certificate verified against the cluster's CA", ErrNotPeer)
	}
	return PeerName(cs.VerifiedChains[0][0])
}

// verifyPeer is a tls.Config.VerifyConnection that accepts only a peer's
// certificate, naming want when want is not empty.
func verifyPeer(want string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		got, err := PeerOf(&cs)
		if err != nil {
			return err
		}
		if want != "" && got != want {
			return fmt.Errorf("%w: the certificate names peer %q, not %q", ErrNotPeer, got, want)
		}
		return nil
	}
}
