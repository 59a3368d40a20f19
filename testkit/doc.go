// Package testkit is the home of the harness shared by corral's
// real-process test tiers: e2e/ (go test) and jepsen/ (its own module, a
// black box over HTTP).
//
//   - testkit/proc builds the corral binary (race-instrumented in CI) and
//     starts, stops, kills, pauses and resumes processes, finds ports,
//     waits for listeners and reads their logs.
//   - testkit/netem cuts, degrades and heals the network between processes
//     on 127.0.0.x addresses with iptables.
//
// None of it imports corral's internals (fsm, cluster, api, ironic, …):
// only the standard library, so that the jepsen module can import it and
// still treat corral as a black box.
package testkit
