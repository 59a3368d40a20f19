// Package client speaks the two HTTP APIs the suite drives, as an
// operator's tooling would, and holds none of corral's code: corral's
// (Corral: the Nova-compatible API and the /v1 admin API; every answer is
// an Outcome, which says whether a write certainly did not take effect) and
// Ironic's (Ironic: nodes and allocations, the enrollment and cleanup of a
// real Ironic's nodes, the simulator's side-effect log). wire.go names
// every request and response body and every path of corral's API the suite
// uses: corral's own, from its package wire.
package client
