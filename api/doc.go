// Package api serves corral's REST API with echo: the native /v1 admin
// API, a Nova-shaped compute subset, a read-only Placement subset, health,
// readiness and metrics, and mounts the peers' internal forwarding
// endpoints (cluster/forward). It owns the route table (routes.go: method,
// path, handler and required role of every route), request and response
// types, token authentication and roles, the mapping of errors to HTTP
// statuses (errors.go) and the ?consistency= parameter.
//
// api reaches the peer it runs on only through the Cluster interface it
// declares. It must never import raft, memberlist, gophercloud, ironic or
// compute.
package api
