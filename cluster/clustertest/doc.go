// Package clustertest runs in-process corral clusters for tests: raft on
// in-memory transports and gossip on loopback, both of which a partition
// cuts with one call (CutRaft cuts raft alone, to make a follower lag),
// boltdb stores in temporary directories, short timeouts, an in-memory
// forwarder that respects partitions, and logs through the test's t.Log.
// With Options.Network the peers talk over loopback instead, as separate
// processes do (raft ports, forwarding's RPC and HTTP), for the tests of
// what crosses the network and of a cluster of mixed versions.
//
// clustertest imports cluster, cluster/forward and fsm; it must never
// import api, ironic or compute, so that each of them can test against it.
package clustertest
