// Package api serves corral's REST API with echo: the Nova-compatible
// compute API, a read-only Placement subset and the native /v1 admin API,
// with health, readiness and metrics, and it mounts the peers' internal
// forwarding endpoints (cluster/forward). It owns the one route table
// (routes.go: method, path, handler, required role and, for /v1, the
// OpenAPI summary of every route) and the OpenAPI document built from it.
//
// Each API has a home of its own over one shared server core:
//
//   - api/core: the echo server and its middleware (request ids, request
//     log and metrics, body and write-rate limits, authentication and
//     roles), the one error mapper (Nova's error bodies under the compute
//     API, Placement's under Placement, the native shape elsewhere), the
//     ?consistency= parameter, proposals, health and the state's metrics;
//   - api/nova: the compute API, its microversions, views and paging;
//   - api/placement: the Placement subset;
//   - api/admin: the /v1 admin API and the operator endpoints.
//
// Sub-packages rather than files of one package: each surface has its own
// vocabulary (Nova's microversions and views, Placement's error codes,
// the admin API's wire types) and helpers that serve it alone; a package
// boundary keeps a helper with what it serves and lets the compiler tell
// when a surface reaches into another. What every surface shares sits in
// core, which knows none of them; the route table and the document stay
// here, in one place, so that every route and its role are read in one
// list. The request and response types clients decode are the wire
// package's, shared with client, the CLI and the upgrade tool.
//
// The tests that drive the assembled API over HTTP (gophercloud, Keystone,
// followers, limits, roles) live here with New; a surface's own helpers
// (the pager, the converters to wire types) are tested in its package.
//
// api reaches the peer it runs on only through core.Cluster. It must never
// import raft, memberlist, gophercloud, ironic or compute.
package api
