// Package forward carries a follower's writes and read-index requests to
// the raft leader over the peers' HTTP API, and owns both ends of it: the
// Client a follower calls, the Handler the leader serves, and the wire
// format of their answers, in which an error
// keeps its kind (not found, conflict, fenced, invalid, not leader, no
// leader) so that errors.Is works on the follower as it did on the leader.
//
// Deciding whether to apply a command here or forward it is the cluster
// package's job (cluster.Node.Propose); authenticating the internal
// endpoints is the job of the server that mounts the Handler: it lets
// through only peers (cluster.Node.AuthenticatePeer), and bounds request
// bodies as it bounds every other route's. The Client authenticates as a
// peer: with the peer token, or, over HTTPS, with the peer certificate
// its TLS configuration carries. The paths of both ends are the API's
// (api.ApplyPath and api.ReadIndexPath, under /v1/internal/): it passes
// them in (Paths), as it names every other route.
//
// forward imports only fsm (for its error sentinels) and the standard
// library. It must never import cluster, api, ironic or compute, nor echo:
// the cluster package imports it, and the API mounts its Handler as a
// plain http.Handler.
package forward
