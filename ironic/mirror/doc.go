// Package mirror keeps the replicated mirror of Ironic's nodes and removes what Ironic holds
// for nobody. Only the leader works: it lists Ironic every sync interval, commits only the
// nodes that changed (a node absent from one listing is marked missing, never dropped), and
// reaps the leftovers of deleted servers and the nodes left deployed with no reservation
// (see reap.go).
//
// It owns the conversion of an Ironic node into its fsm mirror entry and the agreement on
// the Ironic driver's cluster-wide settings (legacy standard inventory), which it reads
// through an explicit Settings dependency. It reaches the peer and Ironic only through the
// interfaces it declares (Cluster, Settings, Ironic): it must never import corral's api,
// cluster or compute packages, nor the virt driver (ironic/driver).
package mirror
