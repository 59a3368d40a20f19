// Package fsm is corral's replicated state machine: the command types that
// travel through the Raft log, their binary encoding, the in-memory state
// they build (hosts, flavors, and later servers, reservations, the Ironic
// node mirror and resource providers), and the snapshot format that lets a
// peer catch up without replaying the whole log.
//
// # Commands
//
// A log entry is one command, in one of two encodings (codec.go,
// codec_binary.go): one byte of CommandType followed by the JSON body of
// the command (EncodingJSON, which every version reads), or the byte 0,
// the byte of the Encoding (EncodingMsgpack, 1), one byte of CommandType
// and the body in msgpack, keyed by the JSON field names, which reads back
// to the very command its JSON reads back to. 0 is no command's type: a
// peer of a version before the binary encodings stops at such an entry as
// at any command type it does not know. Encodings are append-only as
// command types are, and a leader writes one only while every live peer
// advertises that it reads it (KnownEncodings); every entry ever written,
// in either encoding, replays. Command numbers are part of the on-disk
// format and of the wire protocol between peers of different versions, so
// they follow three rules:
//
//   - Numbers are append-only. A new command takes the next free number;
//     existing numbers never change meaning.
//   - A number is never reused, not even after the command it named has been
//     retired. Leave the constant in place and mark it deprecated.
//   - IgnoreUnknownFlag (0x80) may be set on a new command's number when it is
//     safe for an older peer to skip it (for example, purely informational
//     state). A peer that does not know a flagged command skips it and only
//     advances its applied index. A peer that meets an unknown command without
//     the flag panics with a message telling the operator to upgrade it:
//     applying only part of the log would make replicas diverge silently,
//     which is worse than stopping.
//
// A stricter check of an existing command is a change of the format too:
// an entry an older version applied must replay the same. Such a check
// applies only to entries that carry a flag of Meta the leader sets once
// every live peer advertises it (Meta.Bounded, text.go).
//
// Adding a command takes one call to register in an init function of the
// file that owns the entity, next to the command's type and apply function;
// the Store's reads of an entity live in that file too (host.go, flavor.go,
// server.go, node.go, reservation.go, keypair.go, providers.go, quota.go),
// and the package's sentinel errors in errors.go.
//
// # Determinism
//
// Every peer applies the same log and must reach byte-identical state, which
// Store.Digest checks. Apply therefore:
//
//   - never reads the clock: the leader stamps Meta.At (UTC) and any
//     generated identifiers into the command before proposing it;
//   - uses no randomness and performs no I/O;
//   - never lets map iteration order influence state, results or error
//     messages: keys are sorted wherever a map is walked;
//   - either applies a command completely or, when it returns a business error
//     (ErrNotFound, ErrConflict, ErrInvalid), leaves state untouched. The
//     applied index advances for every entry either way.
//
// # Leader decisions
//
// Some commands carry a decision the leader takes from the current state
// before proposing — the owner and claim of a new server, a reassignment
// plan — so that Apply only validates it. Store.Schedule takes those
// decisions (through fsm/sched, which owns every scheduling rule): a
// read-only function of the state that returns the command to commit,
// the servers of a CreateServers decided together. When an entry applied
// in between took what a decision chose, Apply answers ErrStaleDecision.
// Everything else — one decision at a time, batching, deciding again, the
// node mirror's refresh before "No valid host" — is the leader's
// (cluster): fsm holds no queue, lock or context of the leader. fsm
// imports fsm/sched and fsm/placement; neither imports fsm.
//
// # Snapshots
//
// A snapshot is a header ("CORRALSN", uint16 big-endian format version,
// uvarint applied index; from version 2 also uvarint server and node
// counts) followed by typed records (one byte RecordType, uvarint length,
// body) and a terminating zero byte. Bodies are JSON in version 1; in
// version 2 servers, nodes and placement records are binary, written by
// hand without reflection (snapcodec.go), and the others stay JSON. A
// peer restores every version it knows and refuses a newer one. Records are written
// in RecordType order and, within a type, in key order, so equal states give
// byte-identical snapshots. Record types follow the same append-only and
// IgnoreUnknownFlag rules as commands.
package fsm
