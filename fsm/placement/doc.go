// Package placement is corral's resource-provider model: the OpenStack
// Placement semantics that let virtual machines and bare-metal nodes be
// scheduled side by side, held as plain in-memory state that a Raft state
// machine can replicate.
//
// # Model
//
// A resource provider (an Ironic node, a hypervisor, a NUMA cell, ...) has
// a UUID, a unique name, an optional parent (providers form trees; the root
// of a tree has no parent), a set of traits (qualitative facts such as
// HW_CPU_X86_AVX2 or CUSTOM_RAID) and a set of aggregates (UUIDs grouping
// providers). It has at most one inventory per resource class, and
// consumers (servers) hold allocations against those inventories.
//
// The capacity of an inventory is Placement's
//
//	int((total - reserved) * allocation_ratio)
//
// so total 8, reserved 2, ratio 16 gives 96. A single allocation of amount
// n against it must satisfy min_unit <= n <= max_unit and n % step_size == 0,
// and the usage of the class after the write must not exceed the capacity.
//
// Bare metal follows the Placement convention: each Ironic node provider
// reports ONE unit of a custom class (CUSTOM_GOLD, ...), so a node is either
// wholly allocated or free, while hypervisors report VCPU, MEMORY_MB and
// DISK_GB. Because the classes are disjoint, a VM flavor never lands on a
// node and a bare-metal flavor never lands on a hypervisor — unless a node
// also reports the standard classes (the legacy behaviour), in which case
// it is a candidate for VMs too. Removing such standard inventory fails with
// ErrInventoryInUse while an instance still holds it; rewriting the
// instance's allocations to the custom class alone (SetAllocations replaces
// them) frees it.
//
// Validation follows Placement (reserved may equal total, giving capacity
// 0; amounts are at most 2^31-1), with three deliberate differences: an
// inventory's max_unit may not exceed its total; changing an inventory so
// that its capacity falls below its current usage fails with
// ErrInventoryInUse, where Placement accepts it with a warning; and resource
// classes and traits need no registration, any well-formed name is accepted.
// A zero MinUnit, StepSize or AllocationRatio in an Inventory means
// Placement's default of 1, and a zero MaxUnit means Total.
//
// # Generations
//
// Every provider has a generation, 0 at creation, incremented by every
// change to its name, parent, inventory, traits or aggregates, and once by
// every allocation write in which it appears (among the consumers' previous
// or new allocations), as Placement does. Every call that changes an
// existing provider takes the generation the caller last saw and fails with
// ErrConcurrentUpdate if it is not the current one.
//
// Consumers have their own generation: a write for a consumer that holds no
// allocations must pass a nil ConsumerGeneration; the first write creates
// the consumer at generation 0 and each later write must pass the current
// generation and increments it. Writing an empty allocation set deletes the
// consumer, after which it is new again.
//
// # Determinism
//
// The package is pure: no clock, no randomness, no I/O beyond the reader or
// writer a caller passes, and no result, error message or encoding depends
// on map iteration order. Every mutating call either applies completely or
// returns an error and leaves the store untouched, so applying the same calls
// in the same order on two stores gives byte-identical snapshots.
//
// A Store is not safe for concurrent use by itself: callers serialise
// writes and may run readers concurrently with each other only.
//
// # Candidates
//
// Candidates answers Placement's GET /allocation_candidates for requests
// satisfied by a single provider (a child provider may satisfy a request
// alone). Every provider has a dense internal slot number, and the store
// keeps a bitmap per resource class (providers with at least one free unit
// of it), per trait and per aggregate, updated incrementally by every write
// along with the usage totals. A query intersects the bitmaps of its
// constraints, smallest first, stopping as soon as nothing is left, removes
// forbidden traits, and only then looks at the surviving providers to check
// the exact amounts against min_unit, max_unit, step_size and capacity.
//
// Slot numbers never decide an order. Without a Seed, candidates come in
// ascending provider UUID order. With a Seed (typically the consumer UUID)
// they are ordered by a rendezvous hash of seed and provider UUID, highest
// first, ties by UUID: still deterministic, but concurrent requests with
// different seeds spread over different providers instead of all racing
// for the lowest UUIDs. The hash is corral's one rendezvous hash,
// sched.Score, so sched.RankNodes ranks node UUIDs in this same order. Survivors are sorted lazily (a heap), so a small
// Limit is cheap even when many providers match.
//
// # Snapshots
//
// WriteTo writes the canonical encoding: a JSON header line
// {"format":"corral.placement","version":1,"providers":N,"consumers":M},
// then one JSON line per provider in UUID order, one per consumer in UUID
// order, and a trailer line {"end":"corral.placement"}. Sets are written
// sorted and maps with sorted keys, so equal stores encode byte-identically.
// Usages and indexes are derived state: they are not written, and ReadFrom
// rebuilds and checks them. The state machine's snapshots use a denser,
// binary form of the same records instead (EncodeRecords, and a Decoder
// that rebuilds a store from them; snapbin.go), with the same order and
// the same checks on the way back.
//
// # What it owns, what it does not
//
// This package owns resource accounting and the mechanics of allocation
// candidates: which providers have room for a request, with which traits
// and aggregates. Scheduling policy — parsing flavors, Ironic node
// capabilities, choosing a host, reassignment plans — belongs to
// fsm/sched. placement imports the standard library and fsm/sched (for the
// rendezvous hash) only; it must never import fsm, cluster, api, ironic,
// compute or any client library.
package placement
