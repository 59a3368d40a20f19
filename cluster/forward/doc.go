// Package forward carries a follower's writes and read-index requests to
// the raft leader, and owns both ends of it, over two transports:
//
//   - a binary RPC (rpc.go, rpcclient.go): one long-lived yamux session
//     per leader, many requests in flight on streams of their own, each a
//     msgpack request answered by a msgpack response. The connection under
//     a session is the cluster's to open and authenticate (the raft port's
//     peer handshake, then a byte that selects the RPC): the RPCClient is
//     given a Dialer, the Server authenticated connections.
//   - HTTP (forward.go): the Client a follower calls and the Handler the
//     leader's API serves, for a leader that does not serve the RPC (a
//     peer of an older version).
//
// On both, an error keeps its kind (not found, conflict, fenced, invalid,
// not leader, no leader) so that errors.Is works on the follower as it
// did on the leader; the kinds' names are the protocol between versions.
//
// Deciding whether to apply a command here or forward it, and over which
// transport, is the cluster package's job (cluster.Node.Propose);
// authenticating the internal endpoints is the job of the server that
// mounts the Handler: it lets through only peers
// (cluster.Node.AuthenticatePeer), and bounds request bodies as it bounds
// every other route's. The Client authenticates as a peer: with the peer
// token, or, over HTTPS, with the peer certificate its TLS configuration
// carries. The paths of both ends are the API's (api.ApplyPath and
// api.ReadIndexPath, under /v1/internal/): it passes them in (Paths), as
// it names every other route.
//
// forward imports fsm (for its error sentinels), yamux, go-msgpack and
// the standard library. It must never import cluster, api, ironic or
// compute, nor echo: the cluster package imports it, and the API mounts
// its Handler as a plain http.Handler.
package forward
