package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// rolePeer marks the peers' endpoints, under PeerPathPrefix: only a
// peer's identity passes (Peers.AuthenticatePeer), never a user's
// credential, whatever its role. A user's admin role administers the
// cloud through the public API, never the log.
const rolePeer Role = "peer"

// Peers tells a peer's request from everyone else's (cluster.Node).
type Peers interface {
	// AuthenticatePeer returns the peer that sent r (its certificate's
	// name with TLS; empty for the peer token), or why r is no peer's.
	AuthenticatePeer(r *http.Request) (string, error)
	// IsPeerToken reports whether tok is the peers' token, which the
	// public routes refuse: it is no user's credential.
	IsPeerToken(tok string) bool
}

const ctxPeer = "peer"

// isPeerPath reports whether path is one of the peers' endpoints.
func isPeerPath(path string) bool { return strings.HasPrefix(path, PeerPathPrefix) }

// authenticatePeer lets only a peer through to the peers' endpoints.
func (s *Server) authenticatePeer(c echo.Context) error {
	r := c.Request()
	if s.cfg.Peers == nil {
		return fmt.Errorf("%w: this API serves no peers", ErrForbidden)
	}
	peer, err := s.cfg.Peers.AuthenticatePeer(r)
	if err != nil {
		return fmt.Errorf("%w: %s %s is for corral's peers only (%w); a user administers the cloud through the public API",
			ErrForbidden, r.Method, r.URL.Path, err)
	}
	c.Set(ctxPeer, peer)
	return nil
}

// keyringLocal applies a keyring operation another peer relayed to this
// peer alone.
func (s *Server) keyringLocal(c echo.Context) error {
	q := c.Request().URL.Query()
	q.Set("local", "true")
	c.Request().URL.RawQuery = q.Encode()
	return s.keyring(c)
}
