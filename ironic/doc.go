// Package ironic is corral's client of OpenStack Ironic, built on gophercloud/v2: Client
// negotiates the API microversion, lists and reads nodes, reserves them through allocations
// (or instance_uuid on an Ironic without allocations), deploys and undeploys them, manages
// VIFs and power, and retries what Ironic asks clients to retry (409 NodeLocked, transient
// failures of idempotent requests). Every error is an *Error that carries Ironic's
// faultstring and wraps one of the sentinel errors of errors.go.
//
// It owns the wire: authentication, microversions, retries, paging and errors, in Ironic's
// own terms (Node, Allocation, DeploySpec). It knows nothing of servers, hosts or the
// replicated state: it must never import corral's api, cluster, compute or fsm packages.
// Its consumers declare the part of Client they use: the bare-metal virt driver
// (ironic/driver) and the leader's node mirror (ironic/mirror).
package ironic
