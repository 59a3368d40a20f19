// Package cluster runs what the suite tests and looks at it from outside:
// the `corral agent` processes on 127.0.10.x (Cluster, Agent), each as a
// uid of its own so that a partition can tell them apart; the Ironic
// simulator as its own process; their configuration (TLS certificates
// from `corral tls`, the gossip key, Keystone); and Probe, which waits for
// a ready cluster, for its recovery after the last heal and for quiet, and
// reads the final state from every peer and from Ironic.
package cluster
