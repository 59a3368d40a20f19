// Package mirror keeps the replicated mirror of Ironic's nodes and removes what Ironic holds
// for nobody. Only the leader works: it lists Ironic every sync interval, commits only the
// nodes that changed (a node absent from a full listing is marked missing, never dropped), and
// reaps the leftovers of deleted servers and the nodes left deployed with no reservation
// (see reap.go).
//
// A full pass, the first of a leader's term and then one every full sync interval, lists
// every node. The passes in between list only the nodes Ironic changed or created since the
// previous pass, newest first by updated_at and by created_at, down to the previous pass's
// watermark less a margin (incremental.go): with nothing changed a pass reads one short page.
// A change is mirrored by the next pass; a node deleted from Ironic is marked missing by the
// next full pass. A pass compares each node with the mirror as the listing streams in and
// commits the changed ones an entry at a time (pass.go): it holds a page and an entry of
// nodes, not the listing nor a copy of the mirror.
//
// It owns the conversion of an Ironic node into its fsm mirror entry and the agreement on
// the Ironic driver's cluster-wide settings (legacy standard inventory), which it reads
// through an explicit Settings dependency. It reaches the peer and Ironic only through the
// interfaces it declares (Cluster, Settings, Ironic): it must never import corral's api,
// cluster or compute packages, nor the virt driver (ironic/driver).
package mirror
