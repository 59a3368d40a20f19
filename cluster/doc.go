// Package cluster runs one corral peer: raft (raft-boltdb/v2 log, file
// snapshots, TCP transport), memberlist gossip, bootstrap and join, the
// leader loop that reconciles gossip into raft and the FSM's host list
// (the failover judge in judge.go rules on deaths, returns and freezes;
// failover.go commits its verdicts and the reassignment plans), the
// leader's decisions (decide.go: new servers scheduled by fsm, batched,
// decided again until they hold), proposals that apply on the leader or
// go to it through cluster/forward, read consistency levels, readiness,
// and the cluster's metrics. raft's and memberlist's logs are carried
// into the peer's slog logger at their own levels. The HTTP paths of the
// peers' endpoints it calls are the API's (Config.PeerPaths).
//
// cluster must never import api, echo, ironic, compute or gophercloud:
// those consume it through interfaces they declare. Its in-process test
// harness is cluster/clustertest.
package cluster
