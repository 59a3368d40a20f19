package fsm

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Snapshot stream constants.
//
// A snapshot is a header — SnapshotMagic, the format version (uint16
// big-endian), the applied index (uvarint) and, from version 2 on, the
// numbers of servers and of nodes (uvarints, sizing hints for a restore) —
// then typed records (one byte RecordType, uvarint length, body) in
// RecordType order and, within a type, in key order, then RecordEnd. Equal
// states give byte-identical snapshots.
//
// Version 1 wrote every body as JSON. Version 2 writes the bodies of the
// big record kinds — servers, nodes (snapcodec.go) and the placement
// store (placement.Store.EncodeRecords) — in a hand-written binary
// encoding, keeps JSON for the small ones (hosts, flavors, key pairs), and
// adds RecordSettings. Version 3 adds to a server's action the request
// id and the owner's intent (fsm/action_intent.go); it is written only
// while some server's action holds them, which only commands that every
// live peer knows can write, and version 2 otherwise. Version 4 adds the
// server fields of Nova's API (fsm/server_fields.go: reservation id and
// launch index, description, access addresses, tags, a rebuild's
// preserve_ephemeral), written on the same terms: only while a server
// holds one of them. Version 5 has the bodies of version 4; it is written
// while a server's action is one older peers do not know (the power-off
// after the rebuild of a stopped server, rebuild_stopped.go). This peer
// reads all five versions.
const (
	SnapshotMagic   = "CORRALSN"
	SnapshotVersion = snapshotVersionRebuildStop

	// snapshotVersionJSON is the first format: JSON bodies only.
	snapshotVersionJSON = 1
	// snapshotVersionBinary is the first format with binary records.
	snapshotVersionBinary = 2
	// snapshotVersionIntents adds the request id and intent of actions.
	snapshotVersionIntents = 3
	// snapshotVersionFields adds the server fields of Nova's API.
	snapshotVersionFields = 4
	// snapshotVersionRebuildStop adds the action ActionRebuildStop.
	snapshotVersionRebuildStop = 5

	// SnapshotVersionBase is the format written while nothing in the
	// state needs SnapshotVersion's additions (see above).
	SnapshotVersionBase = snapshotVersionBinary

	// MaxRecordSize bounds one record's body, so that a corrupt length
	// cannot make Restore allocate without limit.
	MaxRecordSize = 64 << 20
)

// RecordType is the first byte of every snapshot record. Record types follow
// the command numbering rules: append-only, never reused, IgnoreUnknownFlag
// (0x80) marks records an older peer may skip.
type RecordType uint8

// Record types. Append-only: never renumber, never reuse a number.
const (
	RecordEnd       RecordType = 0 // terminates the stream
	RecordHost      RecordType = 1
	RecordFlavor    RecordType = 2
	RecordServer    RecordType = 3 // reservations are rebuilt from servers
	RecordNode      RecordType = 4
	RecordPlacement RecordType = 5 // version 1: one per JSON line of placement.Store.WriteTo; version 2: one per placement.Store.EncodeRecords record
	RecordKeyPair   RecordType = 6
	RecordSettings  RecordType = 7 // cluster-wide switches (format version 2 on)
	// 8..11 reserved.
	// RecordQuota is one layer's quota limits (quota.go): [quota]'s, a
	// class's, a project's or a user's. Written only when some limit is
	// set, which only commands every live peer knows can do: a snapshot
	// without quotas stays readable by peers that know no quotas.
	RecordQuota RecordType = 12
	// 13..31 reserved.
	// 46..50: the features and what they keep, each written only when not
	// empty (a snapshot without them stays readable by older peers).
	RecordFeatures        RecordType = 46 // the features that are on (feature.go)
	RecordInstanceActions RecordType = 47 // one per server with actions kept (history.go)
	RecordServerGroup     RecordType = 48 // one per server group (server_group.go)
	// 49..50 reserved.
	// RecordServerPorts is one server's Neutron ports and port intent
	// (server_ports.go), written only while some server has them.
	RecordServerPorts RecordType = 56
)

// Ignorable reports whether t carries IgnoreUnknownFlag.
func (t RecordType) Ignorable() bool { return t&RecordType(IgnoreUnknownFlag) != 0 }

// rawRecord is a record body written as is (not JSON-encoded again).
type rawRecord []byte

// recordSpec is how one entity is written to and loaded from snapshots.
type recordSpec struct {
	name string
	// write emits the entity's values in canonical (key) order.
	write func(st *state, emit func(v any) error) error
	// load adds one record body to st, rejecting duplicates.
	load func(st *state, body []byte) error
}

var (
	records     = map[RecordType]recordSpec{}
	recordOrder []RecordType // ascending; the order records are written in
	// binRecords are the record types whose bodies are binary from
	// format version 2 on.
	binRecords = map[RecordType]binarySpec{}
)

// binarySpec is how one entity is written to and loaded from snapshots in
// the binary encoding.
type binarySpec struct {
	// write calls emit with every record body in canonical order; the
	// body is reused once emit returns.
	write func(st *state, emit func(body []byte) error) error
	// load adds one record body to st, rejecting duplicates, sharing
	// equal values through sh (its loader's own). What it keeps may
	// refer to body.
	load func(st *state, sh *sharer, body string) error
}

// registerBinaryRecord makes t a binary record type (see registerRecord:
// t keeps its JSON spec, used to read version 1 snapshots).
func registerBinaryRecord(t RecordType, spec binarySpec) {
	if _, dup := binRecords[t]; dup || t == RecordEnd {
		panic(fmt.Sprintf("fsm: binary record type %d registered twice or reserved", uint8(t)))
	}
	binRecords[t] = spec
}

// registerRecord adds a snapshot record type. Mistakes are programming errors
// and stop the program at start.
func registerRecord(t RecordType, spec recordSpec) {
	if t == RecordEnd {
		panic("fsm: record type 0 is the stream terminator")
	}
	if _, dup := records[t]; dup {
		panic(fmt.Sprintf("fsm: record type %d registered twice", uint8(t)))
	}
	records[t] = spec
	recordOrder = append(recordOrder, t)
	slices.Sort(recordOrder)
}

// Snapshot is a point-in-time copy of a Store's state, ready to write
// (see state.clone).
type Snapshot struct {
	index uint64
	st    *state
}

// Index returns the applied index the snapshot was taken at.
func (sn *Snapshot) Index() uint64 { return sn.index }

// WriteTo writes the snapshot's canonical encoding to w.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	servers, nodes, version := len(sn.st.servers), len(sn.st.nodes), sn.st.snapshotVersion()
	if sn.st.frozen != nil {
		servers, nodes, version = sn.st.sizes[0], sn.st.sizes[1], sn.st.version
	}
	if err := writeHeader(bw, version, sn.index, servers, nodes); err != nil {
		return cw.n, err
	}
	if err := writeRecords(bw, sn.st); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

// writeHeader writes the stream header: magic, format version, applied
// index, then (version 2 on) the number of servers and of nodes, which
// a restore uses to size its maps.
func writeHeader(w *bufio.Writer, version uint16, index uint64, servers, nodes int) error {
	hdr := make([]byte, 0, len(SnapshotMagic)+2+3*binary.MaxVarintLen64)
	hdr = append(hdr, SnapshotMagic...)
	hdr = binary.BigEndian.AppendUint16(hdr, version)
	hdr = binary.AppendUvarint(hdr, index)
	hdr = binary.AppendUvarint(hdr, uint64(servers))
	hdr = binary.AppendUvarint(hdr, uint64(nodes))
	_, err := w.Write(hdr)
	return err
}

// writeRecords writes every record of st in canonical order, then the
// terminator. The records captured by a snapshot copy (st.frozen) are
// written as captured.
func writeRecords(w *bufio.Writer, st *state) error {
	var lenBuf [binary.MaxVarintLen64]byte
	for _, t := range recordOrder {
		if bufs, ok := st.frozen[t]; ok {
			for _, b := range bufs {
				if _, err := w.Write(b); err != nil {
					return err
				}
			}
			continue
		}
		if bin, ok := binRecords[t]; ok {
			err := bin.write(st, func(body []byte) error {
				if err := w.WriteByte(byte(t)); err != nil {
					return err
				}
				if _, err := w.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(body)))]); err != nil {
					return err
				}
				_, err := w.Write(body)
				return err
			})
			if err != nil {
				return err
			}
			continue
		}
		spec := records[t]
		emit := func(v any) error {
			var body []byte
			var err error
			if raw, ok := v.(rawRecord); ok {
				body = raw
			} else if body, err = json.Marshal(v); err != nil {
				return fmt.Errorf("encode %s record: %w", spec.name, err)
			}
			if err := w.WriteByte(byte(t)); err != nil {
				return err
			}
			if _, err := w.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(body)))]); err != nil {
				return err
			}
			_, err = w.Write(body)
			return err
		}
		if err := spec.write(st, emit); err != nil {
			return err
		}
	}
	return w.WriteByte(byte(RecordEnd))
}

// readSnapshot parses a snapshot stream into a fresh state.
func readSnapshot(r io.Reader) (*state, uint64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var magic [len(SnapshotMagic)]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot header: %w", ErrInvalid, truncated(err))
	}
	if string(magic[:]) != SnapshotMagic {
		return nil, 0, fmt.Errorf("%w: snapshot does not start with %q: it is not a corral snapshot", ErrInvalid, SnapshotMagic)
	}
	var ver [2]byte
	if _, err := io.ReadFull(br, ver[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot header: %w", ErrInvalid, truncated(err))
	}
	version := binary.BigEndian.Uint16(ver[:])
	switch v := version; {
	case v > SnapshotVersion:
		return nil, 0, fmt.Errorf("%w: snapshot format version %d is newer than this peer supports (%d): upgrade this peer", ErrInvalid, v, SnapshotVersion)
	case v == 0:
		return nil, 0, fmt.Errorf("%w: snapshot format version 0 does not exist: the snapshot is corrupt", ErrInvalid)
	}
	index, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot applied index: %w", ErrInvalid, truncated(err))
	}
	st := newState()
	st.loadVersion, st.indexLater = version, true
	if version > snapshotVersionJSON {
		servers, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot server count: %w", ErrInvalid, truncated(err))
		}
		nodes, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot node count: %w", ErrInvalid, truncated(err))
		}
		// Hints only (the records are what counts), bounded so that a
		// corrupt count cannot allocate without limit.
		hint := func(n uint64) int { return int(min(n, 1<<20)) }
		st.servers = make(map[string]Server, hint(servers))
		st.loaded.live = make([]liveEntry, 0, hint(servers))
		st.reservations = make(map[string]string, hint(servers))
		st.nodes = make(map[string]Node, hint(nodes))
	}
	// The binary records load on one goroutine per type (servers, nodes,
	// placement touch disjoint parts of st), the others here. The error
	// reported is the one of the first bad record, as a sequential read
	// would report it.
	loads := newRecordLoads(st)
	at, err := readRecords(br, st, version, loads)
	if wat, werr := loads.wait(); werr != nil && (err == nil || wat < at) {
		err = werr
	}
	if err != nil {
		return nil, 0, err
	}
	if err := st.finishRestore(); err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot: %w", ErrInvalid, err)
	}
	return st, index, nil
}

// readRecords reads the records up to RecordEnd, loading the JSON ones
// into st and handing the binary ones to loads. It returns the error of
// the first record it could not read or load, with that record's number.
func readRecords(br *bufio.Reader, st *state, version uint16, loads *recordLoads) (int, error) {
	for n := 1; ; n++ {
		b, err := br.ReadByte()
		if err != nil {
			return n, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
		}
		t := RecordType(b)
		if t == RecordEnd {
			return n, nil
		}
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return n, fmt.Errorf("%w: snapshot record %d length: %w", ErrInvalid, n, truncated(err))
		}
		if size > MaxRecordSize {
			return n, fmt.Errorf("%w: snapshot record %d is %d bytes, more than the limit of %d: the snapshot is corrupt", ErrInvalid, n, size, MaxRecordSize)
		}
		spec, known := records[t]
		if !known && !t.Ignorable() {
			return n, fmt.Errorf("%w: snapshot record %d has unknown type %d: the snapshot was written by a newer corral; upgrade this peer", ErrInvalid, n, uint8(t))
		}
		if !known {
			if _, err := br.Discard(int(size)); err != nil {
				return n, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
			}
			continue
		}
		if _, isBin := binRecords[t]; isBin && version > snapshotVersionJSON {
			if err := loads.read(br, t, n, int(size)); err != nil {
				return n, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
			}
			continue
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(br, body); err != nil {
			return n, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
		}
		if err := spec.load(st, body); err != nil {
			return n, fmt.Errorf("%w: snapshot record %d (%s): %w", ErrInvalid, n, spec.name, err)
		}
	}
}

// truncated turns an EOF in the middle of a snapshot into a clear error.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("snapshot is truncated (%w): take a new snapshot from a healthy peer", io.ErrUnexpectedEOF)
	}
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
