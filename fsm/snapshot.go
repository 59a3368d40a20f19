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
const (
	SnapshotMagic   = "CORRALSN"
	SnapshotVersion = 1

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
	RecordPlacement RecordType = 5 // one record per line of the placement store's canonical encoding
	RecordKeyPair   RecordType = 6
	// 7..31 reserved.
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
)

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

// Snapshot is a point-in-time deep copy of a Store's state.
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
	if err := writeHeader(bw, sn.index); err != nil {
		return cw.n, err
	}
	if err := writeRecords(bw, sn.st); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

func writeHeader(w *bufio.Writer, index uint64) error {
	var hdr [len(SnapshotMagic) + 2 + binary.MaxVarintLen64]byte
	n := copy(hdr[:], SnapshotMagic)
	binary.BigEndian.PutUint16(hdr[n:], SnapshotVersion)
	n += 2
	n += binary.PutUvarint(hdr[n:], index)
	_, err := w.Write(hdr[:n])
	return err
}

// writeRecords writes every record of st in canonical order, then the
// terminator.
func writeRecords(w *bufio.Writer, st *state) error {
	var lenBuf [binary.MaxVarintLen64]byte
	for _, t := range recordOrder {
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
	switch v := binary.BigEndian.Uint16(ver[:]); {
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
	for n := 1; ; n++ {
		b, err := br.ReadByte()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
		}
		t := RecordType(b)
		if t == RecordEnd {
			if err := st.finishLoad(); err != nil {
				return nil, 0, fmt.Errorf("%w: snapshot: %w", ErrInvalid, err)
			}
			return st, index, nil
		}
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot record %d length: %w", ErrInvalid, n, truncated(err))
		}
		if size > MaxRecordSize {
			return nil, 0, fmt.Errorf("%w: snapshot record %d is %d bytes, more than the limit of %d: the snapshot is corrupt", ErrInvalid, n, size, MaxRecordSize)
		}
		spec, known := records[t]
		if !known && !t.Ignorable() {
			return nil, 0, fmt.Errorf("%w: snapshot record %d has unknown type %d: the snapshot was written by a newer corral; upgrade this peer", ErrInvalid, n, uint8(t))
		}
		if !known {
			if _, err := br.Discard(int(size)); err != nil {
				return nil, 0, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
			}
			continue
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot record %d: %w", ErrInvalid, n, truncated(err))
		}
		if err := spec.load(st, body); err != nil {
			return nil, 0, fmt.Errorf("%w: snapshot record %d (%s): %w", ErrInvalid, n, spec.name, err)
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
