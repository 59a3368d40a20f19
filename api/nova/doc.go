// Package nova serves corral's Nova-compatible compute API under
// wire.ComputePrefix: microversion negotiation (2.1 to 2.79), servers and
// their actions, flavors with extra specs and access, key pairs, limits,
// availability zones, compute services and hypervisors as Nova shows its
// Ironic driver, and the read-only os-baremetal-nodes proxy. Views follow
// Nova's, per microversion; request bodies are the wire package's.
//
// Its handlers are mounted by the route table in api/routes.go over the
// server core (api/core). It never imports raft, memberlist, gophercloud,
// ironic or compute.
package nova
