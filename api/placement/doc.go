// Package placement serves corral's read-only Placement subset under
// wire.PlacementPrefix (microversions 1.0 to 1.39): resource providers
// with their inventories, usages, traits, aggregates and allocations,
// allocation candidates, usages per project, traits and resource classes,
// from the replicated Placement state (fsm/placement). Every write answers
// 403: corral keeps the providers itself.
//
// Its handlers are mounted by the route table in api/routes.go over the
// server core (api/core).
package placement
