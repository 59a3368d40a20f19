// Package admin serves corral's native admin API under wire.AdminPrefix
// (/v1): the cluster's members and raft, the compute hosts with the
// cloud's bare-metal capacity, the Ironic node mirror and its
// reservations, networks, who owns a server and why, moves and dry-run
// plans, the Ironic flavor migration, the adoption of servers built
// elsewhere, and the operator endpoints (gossip keyring, raft peers,
// snapshots). Its request and response bodies are the wire package's.
//
// Its handlers are mounted by the route table in api/routes.go over the
// server core (api/core).
package admin
