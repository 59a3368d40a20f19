package api

import "github.com/corral-dev/corral/api/core"

// Route is a line of the route table, for the tests of package api_test.
type Route struct {
	Method, Path string
	Role         core.Role
}

// RouteTable is every route s serves (routeTable).
func (s *Server) RouteTable() []Route {
	var out []Route
	for _, r := range s.routeTable() {
		out = append(out, Route{Method: r.method, Path: r.path, Role: r.role})
	}
	return out
}
