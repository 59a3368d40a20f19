// Package sched is corral's one home for scheduling decisions: where a new
// server goes and where a dead or drained host's servers go. It is pure: no
// I/O, no clock, no randomness, and no result depends on map iteration
// order, so every peer that feeds it the same inputs gets the same answer.
//
// # What it owns
//
//   - The one parser of Nova flavor extra specs (Parse): resources:<CLASS>=<N>,
//     trait:<NAME>=required|forbidden, capabilities:<key>=<value> and the
//     comma form capabilities=<key>[:<value>],... (a bare key means "true",
//     as in capabilities="supports_uefi,has_gpu"). The state machine's
//     placement query and the Ironic driver's allocation request are both
//     built from the Request it returns.
//   - Candidate filtering: whether an Ironic node (class, traits,
//     capabilities) or an allocation candidate (capabilities) satisfies a
//     Request. Capabilities are not a Placement concept: a node that lacks a
//     required capability is filtered out here, before anything is claimed.
//   - Host choice (Place, ChooseHost): the instance-count weigher (fewest
//     servers first), ties broken by rendezvous hash of the server id.
//   - Reassignment plans (Reassign): a dead or drained host's servers spread
//     over the remaining hosts, fewest servers first, one server at a time.
//   - The one rendezvous hash (SeedHash, Score, Rendezvous, RankNodes). The
//     placement package orders seeded allocation candidates with it too, so
//     a node ranking here and Placement's seeded order agree.
//
// # What it does not own
//
// Resource accounting — providers, inventories, traits, allocations,
// usages and the mechanics of allocation candidates (which providers have
// room) — belongs to fsm/placement. The state machine (fsm) gathers the
// inputs from its state and records the decision in the command it
// proposes; Apply only validates it.
//
// # Imports
//
// sched imports only the standard library. It must never import fsm,
// fsm/placement, cluster, api, ironic, compute or any client library:
// fsm and the Ironic driver import sched, so it takes its own small input
// types (Flavor, Node, Offer, Candidate) instead of theirs.
package sched
