// Package nova serves corral's Nova-compatible compute API under
// wire.ComputePrefix: microversion negotiation (2.1 to 2.79), servers and
// their actions, flavors with extra specs and access, key pairs, limits,
// availability zones, compute services and hypervisors as Nova shows its
// Ironic driver, and the read-only os-baremetal-nodes proxy. Request bodies
// are the wire package's.
//
// Views follow Nova's exactly, per microversion: each resource's view is
// built from one table of its fields with the microversions that carry
// them (fields.go; the tables sit with their handlers), so that a field
// shows from the microversion where Nova adds it and goes where Nova drops
// it. api's views_schema_test.go holds every view to Nova's response
// schemas as Tempest ships them, at every boundary of the tables.
//
// Its handlers are mounted by the route table in api/routes.go over the
// server core (api/core). It never imports raft, memberlist, gophercloud,
// ironic or compute.
package nova
