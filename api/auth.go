package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/fsm"
)

// RoleMember may read and write its own project's servers (Keystone's
// member role); RoleAdmin and RoleReader are in server.go.
const RoleMember Role = "member"

// Route requirements besides rolePublic, RoleReader and RoleAdmin (which
// are cluster-wide: a static token of that role, or a Keystone admin):
// roleProjectReader and roleProjectMember are met by any Keystone project
// reader or member, within its own project.
const (
	roleProjectReader Role = "project_reader" // read one's project's resources, and flavors
	roleProjectMember Role = "project_member" // boot and delete one's project's servers
)

// TokenValidator validates Keystone tokens (auth/keystone.Validator).
// Errors wrap keystone.ErrInvalidToken (401) or keystone.ErrUnavailable (503).
type TokenValidator interface {
	Validate(ctx context.Context, token string) (keystone.Identity, error)
	// WWWAuthenticate is the value of the WWW-Authenticate header of a 401.
	WWWAuthenticate() string
}

// caller is who a request speaks for.
type caller struct {
	role Role // RoleAdmin, RoleMember or RoleReader
	// static: a configured token, cluster-wide (sees every project).
	static bool
	// project and user: the token's (empty for static tokens).
	project, user string
	// keystoneToken is the caller's token when Keystone issued it: the one
	// credential corral may pass on to Glance and Ironic, where the caller's
	// own authority is meant. Empty for corral's static tokens, which never
	// leave corral.
	keystoneToken string
}

const ctxCaller = "caller"

func callerOf(c echo.Context) caller {
	cl, _ := c.Get(ctxCaller).(caller)
	return cl
}

// seesEveryProject: static tokens and Keystone admins may act on any
// project's servers.
func (cl caller) seesEveryProject() bool { return cl.static || cl.role == RoleAdmin }

// owns reports whether the caller may see the server: its project's, or
// any for a caller that sees every project.
func (cl caller) owns(v fsm.Server) bool {
	return cl.seesEveryProject() || (cl.project != "" && v.ProjectID == cl.project)
}

// allows reports whether the caller meets a route's requirement.
func (cl caller) allows(need Role) bool {
	switch need {
	case rolePublic:
		return true
	case roleProjectReader:
		return cl.role == RoleAdmin || cl.role == RoleMember || cl.role == RoleReader
	case roleProjectMember:
		return cl.role == RoleAdmin || cl.role == RoleMember
	case RoleReader:
		return cl.role == RoleAdmin || (cl.static && cl.role == RoleReader)
	}
	return cl.role == RoleAdmin
}

// authMiddleware authenticates the token and checks it against the role
// the route table requires. A request that matches no route (404, 405)
// needs a valid token, and an admin one for anything but GET and HEAD.
func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		m := c.Request().Method
		need, known := s.roles[m+" "+c.Path()]
		if !known {
			need = roleProjectReader
			if m != http.MethodGet && m != http.MethodHead {
				need = RoleAdmin
			}
		}
		if need == rolePublic {
			return next(c)
		}
		if need == rolePeer || isPeerPath(c.Request().URL.Path) {
			// No user's credential is looked at, let alone sent to Keystone.
			if err := s.authenticatePeer(c); err != nil {
				return err
			}
			return next(c)
		}
		cl, err := s.authenticate(c)
		if err != nil {
			return err
		}
		c.Set(ctxRole, cl.role)
		c.Set(ctxCaller, cl)
		if !cl.allows(need) {
			return forbidden(cl, need, m, c.Request().URL.Path)
		}
		return next(c)
	}
}

func forbidden(cl caller, need Role, method, path string) error {
	switch {
	case cl.role == "":
		return fmt.Errorf("%w: the token carries none of the roles admin, member, reader in its project; "+
			"ask an administrator for one", ErrForbidden)
	case cl.static:
		return fmt.Errorf("%w: the token has role %q, which may only read; use an admin token to %s %s",
			ErrForbidden, cl.role, method, path)
	case need == roleProjectMember:
		return fmt.Errorf("%w: role %q may only read; %s %s needs the member or admin role in the project",
			ErrForbidden, cl.role, method, path)
	}
	return fmt.Errorf("%w: %s %s needs the admin role (the token has %q in project %s)",
		ErrForbidden, method, path, cl.role, cl.project)
}

// authenticate finds the caller of a request: a configured static token,
// else, with Keystone, the token's identity.
func (s *Server) authenticate(c echo.Context) (caller, error) {
	h := c.Request().Header
	var tok string
	switch vals := h.Values("X-Auth-Token"); {
	case len(vals) > 0 && s.cfg.Keystone != nil:
		// Keystone's rules for the header: exactly one, printable ASCII.
		t, err := keystone.TokenFromHeader(h)
		if err != nil {
			return caller{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
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
		return caller{}, ErrUnauthorized
	}
	if s.cfg.Peers != nil && s.cfg.Peers.IsPeerToken(tok) {
		return caller{}, fmt.Errorf("%w: this is the peers' token ([auth] peer_token), which only corral's peers use among themselves; use an admin or reader token", ErrUnauthorized)
	}
	if role, ok := s.lookupToken(tok); ok {
		return caller{role: role, static: true}, nil
	}
	if s.cfg.Keystone == nil {
		return caller{}, fmt.Errorf("%w: the token is not known to this cluster; check CORRAL_TOKEN against [auth] in the agents' configuration", ErrUnauthorized)
	}
	id, err := s.cfg.Keystone.Validate(c.Request().Context(), tok)
	switch {
	case errors.Is(err, keystone.ErrInvalidToken):
		return caller{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	case errors.Is(err, keystone.ErrUnavailable):
		return caller{}, fmt.Errorf("%w: %w", ErrAuthUnavailable, err)
	case err != nil:
		return caller{}, err
	}
	cl := caller{project: id.ProjectID, user: id.UserID, keystoneToken: tok}
	switch {
	case id.HasRole("admin"):
		cl.role = RoleAdmin
	case id.ProjectID == "":
		// Member and reader are project roles: a domain or system token
		// without admin grants nothing here.
	case id.HasRole("member"):
		cl.role = RoleMember
	case id.HasRole("reader"):
		cl.role = RoleReader
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

func notFound(id string) error {
	return echo.NewHTTPError(http.StatusNotFound, "Instance "+id+" could not be found.")
}

// listProject is the project a server list is limited to ("" for every
// project), as Nova's default policy has it: a project's caller sees its
// project; a Keystone admin too, unless it asks for all_tenants, which
// only admins may; static tokens see every project. With every project,
// project_id (or tenant_id) narrows the list to one.
func listProject(cl caller, q url.Values) (string, error) {
	all := false
	if q.Has("all_tenants") {
		switch strings.ToLower(strings.TrimSpace(q.Get("all_tenants"))) {
		case "", "1", "t", "true", "on", "y", "yes":
			all = true
		case "0", "f", "false", "off", "n", "no":
		default:
			return "", badRequest("all_tenants %q is not a boolean (use all_tenants=1)", q.Get("all_tenants"))
		}
	}
	if all && !cl.seesEveryProject() {
		return "", fmt.Errorf("%w: listing every project's servers (all_tenants) needs the admin role", ErrForbidden)
	}
	if !cl.static && !all {
		return cl.project, nil
	}
	if p := q.Get("project_id"); p != "" {
		return p, nil
	}
	return q.Get("tenant_id"), nil
}

// visibleServer returns a live server the caller may see: another
// project's is a 404, as in Nova. Handlers of /servers/{id} use it.
func (s *Server) visibleServer(c echo.Context, id string) (fsm.Server, error) {
	v, err := s.liveServer(id)
	if err != nil {
		return v, err
	}
	if !callerOf(c).owns(v) {
		return fsm.Server{}, notFound(id)
	}
	return v, nil
}
