// Package core is the server core the API's three surfaces share (Nova's
// compute API in api/nova, Placement in api/placement, the native admin
// API in api/admin): the echo server and its middleware (request ids,
// request log and metrics, body and write-rate limits, authentication and
// roles), the one mapper of errors to HTTP statuses and bodies, the
// ?consistency= parameter and the proposal of writes, health, readiness
// and the state's metrics.
//
// core reaches the peer it runs on only through the Cluster interface it
// declares. Like all of api it never imports raft, memberlist,
// gophercloud, ironic or compute.
package core
