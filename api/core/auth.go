package core

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/fsm"
)

// Role is what a token may do, and what a route requires.
type Role string

// The roles of a caller.
const (
	RoleAdmin  Role = "admin"  // read and write
	RoleReader Role = "reader" // read only
	// RoleMember may read and write its own project's servers (Keystone's
	// member role).
	RoleMember Role = "member"
)

// What a route requires besides RoleReader and RoleAdmin (which are
// cluster-wide: a static token of that role, or a Keystone admin).
const (
	// RolePublic routes need no token at all.
	RolePublic Role = "public"
	// RoleProjectReader and RoleProjectMember are met by any Keystone
	// project reader or member, within its own project (handlers keep to
	// it).
	RoleProjectReader Role = "project_reader" // read one's project's resources, and flavors
	RoleProjectMember Role = "project_member" // boot and delete one's project's servers
	// RolePeer marks the peers' endpoints (peers.go).
	RolePeer Role = "peer"
	// RoleService is met by the admin role or Keystone's service role
	// (Nova's service_or_admin): what other OpenStack services call.
	RoleService Role = "service"
)

// TokenValidator validates Keystone tokens (auth/keystone.Validator).
// Errors wrap keystone.ErrInvalidToken (401) or keystone.ErrUnavailable (503).
type TokenValidator interface {
	Validate(ctx context.Context, token string) (keystone.Identity, error)
	// WWWAuthenticate is the value of the WWW-Authenticate header of a 401.
	WWWAuthenticate() string
}

// Caller is who a request speaks for.
type Caller struct {
	Role Role // RoleAdmin, RoleMember or RoleReader
	// Static: a configured token, cluster-wide (sees every project).
	Static bool
	// Project and User: the token's (empty for static tokens).
	Project, User string
	// Service: the Keystone token carries the service role (another
	// OpenStack service's user).
	Service bool
	// KeystoneToken is the caller's token when Keystone issued it: the one
	// credential corral may pass on to Glance and Ironic, where the caller's
	// own authority is meant. Empty for corral's static tokens, which never
	// leave corral.
	KeystoneToken string
}

const ctxCaller = "caller"

// CallerOf is who the request speaks for (the zero Caller on public and
// peers' routes).
func CallerOf(c echo.Context) Caller {
	cl, _ := c.Get(ctxCaller).(Caller)
	return cl
}

// SetCaller records who the request speaks for, as the authentication
// middleware does (tests of a surface's handlers use it).
func SetCaller(c echo.Context, cl Caller) { c.Set(ctxCaller, cl) }

// CallerProject is the project a request speaks for: the token's, or
// fsm.DefaultProject for static tokens.
func CallerProject(c echo.Context) string {
	if p := CallerOf(c).Project; p != "" {
		return p
	}
	return fsm.DefaultProject
}

// SeesEveryProject: static tokens and Keystone admins may act on any
// project's servers.
func (cl Caller) SeesEveryProject() bool { return cl.Static || cl.Role == RoleAdmin }

// Owns reports whether the caller may see the server: its project's, or
// any for a caller that sees every project.
func (cl Caller) Owns(v fsm.Server) bool {
	return cl.SeesEveryProject() || (cl.Project != "" && v.ProjectID == cl.Project)
}

// Allows reports whether the caller meets a route's requirement.
func (cl Caller) Allows(need Role) bool {
	switch need {
	case RolePublic:
		return true
	case RoleProjectReader:
		return cl.Role == RoleAdmin || cl.Role == RoleMember || cl.Role == RoleReader
	case RoleProjectMember:
		return cl.Role == RoleAdmin || cl.Role == RoleMember
	case RoleReader:
		return cl.Role == RoleAdmin || (cl.Static && cl.Role == RoleReader)
	case RoleService:
		return cl.Role == RoleAdmin || cl.Service
	}
	return cl.Role == RoleAdmin
}

// RequireAdmin refuses callers that are not admins, whatever the route
// table says (for admin-only reads in particular).
func RequireAdmin(c echo.Context) error {
	if CallerOf(c).Role != RoleAdmin {
		return fmt.Errorf("%w: %s %s needs an admin token", ErrForbidden, c.Request().Method, c.Request().URL.Path)
	}
	return nil
}

// authorize authenticates the token and checks it against the role the
// route table requires. A request that matches no route (404), or no
// method of its path (405), needs a valid token with a role, whatever its
// method: it is answered 404 or 405, as Nova answers, never 403.
func (s *Server) authorize(c echo.Context) error {
	m := c.Request().Method
	need, known := s.roles[routeOf{m, c.Path()}]
	if !known {
		need = RoleProjectReader
	}
	if need == RolePublic {
		return nil
	}
	if need == RolePeer || IsPeerPath(c.Request().URL.Path) {
		// No user's credential is looked at, let alone sent to Keystone.
		return s.authenticatePeer(c)
	}
	cl, err := s.authenticate(c)
	if err != nil {
		return err
	}
	SetCaller(c, cl)
	if !cl.Allows(need) {
		return forbidden(cl, need, m, c.Request().URL.Path)
	}
	return nil
}

func forbidden(cl Caller, need Role, method, path string) error {
	switch {
	case need == RoleService:
		return fmt.Errorf("%w: %s %s is for other OpenStack services: it needs the admin or service role", ErrForbidden, method, path)
	case cl.Role == "":
		return fmt.Errorf("%w: the token carries none of the roles admin, member, reader in its project; "+
			"ask an administrator for one", ErrForbidden)
	case cl.Static:
		return fmt.Errorf("%w: the token has role %q, which may only read; use an admin token to %s %s",
			ErrForbidden, cl.Role, method, path)
	case need == RoleProjectMember:
		return fmt.Errorf("%w: role %q may only read; %s %s needs the member or admin role in the project",
			ErrForbidden, cl.Role, method, path)
	}
	return fmt.Errorf("%w: %s %s needs the admin role (the token has %q in project %s)",
		ErrForbidden, method, path, cl.Role, cl.Project)
}

// authenticate finds the caller of a request: a configured static token,
// else, with Keystone, the token's identity.
func (s *Server) authenticate(c echo.Context) (Caller, error) {
	h := c.Request().Header
	var tok string
	switch vals := h.Values("X-Auth-Token"); {
	case len(vals) > 0 && s.cfg.Keystone != nil:
		// Keystone's rules for the header: exactly one, printable ASCII.
		t, err := keystone.TokenFromHeader(h)
		if err != nil {
			return Caller{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
		}
		tok = t
	case len(vals) > 0:
		tok = strings.TrimSpace(vals[0])
	}
	if tok == "" {
		if a := h.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
			tok = strings.TrimSpace(strings.TrimPrefix(a, "Bearer "))
		}
	}
	if tok == "" {
		return Caller{}, ErrUnauthorized
	}
	if s.cfg.Peers != nil && s.cfg.Peers.IsPeerToken(tok) {
		return Caller{}, fmt.Errorf("%w: this is the peers' token ([auth] peer_token), which only corral's peers use among themselves; use an admin or reader token", ErrUnauthorized)
	}
	if role, ok := s.lookupToken(tok); ok {
		return Caller{Role: role, Static: true}, nil
	}
	if s.cfg.Keystone == nil {
		return Caller{}, fmt.Errorf("%w: the token is not known to this cluster; check CORRAL_TOKEN against [auth] in the agents' configuration", ErrUnauthorized)
	}
	id, err := s.cfg.Keystone.Validate(c.Request().Context(), tok)
	switch {
	case errors.Is(err, keystone.ErrInvalidToken):
		return Caller{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	case errors.Is(err, keystone.ErrUnavailable):
		return Caller{}, fmt.Errorf("%w: %w", ErrAuthUnavailable, err)
	case err != nil:
		return Caller{}, err
	}
	cl := Caller{Project: id.ProjectID, User: id.UserID, KeystoneToken: tok, Service: id.HasRole("service")}
	switch {
	case id.HasRole("admin"):
		cl.Role = RoleAdmin
	case id.ProjectID == "":
		// Member and reader are project roles: a domain or system token
		// without admin grants nothing here.
	case id.HasRole("member"):
		cl.Role = RoleMember
	case id.HasRole("reader"):
		cl.Role = RoleReader
	}
	return cl, nil
}

// lookupToken compares in constant time against every configured token.
func (s *Server) lookupToken(tok string) (Role, bool) {
	var found Role
	for t, r := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			found = r
		}
	}
	return found, found != ""
}
