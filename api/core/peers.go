package core

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The peers' endpoints live under PeerPathPrefix (peer_paths.go) (RolePeer): only a
// peer's identity passes (Peers.AuthenticatePeer), never a user's
// credential, whatever its role. A user's admin role administers the
// cloud through the public API, never the log.

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

// IsPeerPath reports whether path is one of the peers' endpoints.
func IsPeerPath(path string) bool { return strings.HasPrefix(path, PeerPathPrefix) }

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
