// Package upgraderolling is the rolling-upgrade tier: three peers of the
// previous release, built from git history, with servers ACTIVE on Ironic
// (the real one at $IRONIC_URL, as CI sets it; the simulator otherwise,
// which the test says loudly), are replaced one at a time by this tree's
// binary on the same data dirs, by the procedure of docs/operations.md
// ("Rolling upgrades"), run as written, under a workload of boots, deletes
// and server actions. It checks that no acknowledged write is lost, that
// no server is left stuck, that no node is reserved twice (in corral and in
// Ironic), that the command types this release adds appear in the raft log
// only after the last old peer is gone, that the entries are JSON until
// the last peer runs this tree and msgpack once every peer says so, and
// that an old binary started afterwards on an upgraded data dir is refused
// with a clear message.
//
// The previous release is commit c06b12d (baseCommit): the peer identity
// work (c0cc9fe, 2cd02c6: raft behind the peer token's challenge or peer
// certificates) before the server action intents (89b4779). It speaks raft
// as this tree does, so peers of both authenticate each other, and it lacks
// command types 27 (StartServerAction) and 40 (RequestServerActionWithID)
// and snapshot format 3, which this tree writes: the upgrade holds the
// gating of new types to account. 448a834, main when the tier was written,
// knows the same types as this tree, so an upgrade from it would prove only
// that a binary restarts on its data dir; a release from before c0cc9fe
// cannot answer the peer token's challenge and is upgraded with a stop of
// every peer (CHANGELOG.md). When this tree adds command types again, the
// next release moves baseCommit to the release before them.
package upgraderolling
