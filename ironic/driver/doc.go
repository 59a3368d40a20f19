// Package driver is the bare-metal virt driver of corral: the compute.Virt of an ironic host.
// It builds a server by reserving a matching Ironic node (an allocation named after the
// server, or the node's instance_uuid on an Ironic without allocations), committing the
// reservation, and deploying; it deletes a server by undeploying its node and releasing the
// reservation. Every step first reads what Ironic already has, so a retry or a new owner
// resumes instead of redoing, and every Ironic side effect is preceded by a check that the
// node still carries this server's reservation.
//
// A deploy or undeploy in flight holds no worker: the driver parks the server
// (compute.Handle.Await) and the host's one watcher (watch.go, run by the manager as a
// compute.Runner) learns where every parked node stands with a listing per provision state
// per round, then wakes the server's next step.
//
// It owns only what an owner does to its own servers; the node mirror and the reaper are
// the leader's (ironic/mirror), and node ranking lives apart in candidates.go. It consumes
// Ironic through the Ironic interface it declares and the peer through compute.Handle: it
// must never import corral's api or cluster packages, nor ironic/mirror.
package driver
