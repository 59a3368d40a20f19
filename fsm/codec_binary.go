package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
)

// Encoding is how a log entry is written. Every version reads EncodingJSON;
// a leader writes another only while every live peer advertises that it
// reads it (KnownEncodings), as for a new command type.
type Encoding uint8

// Entry encodings. Append-only, as command types.
const (
	// EncodingJSON: one byte of CommandType, then the JSON body.
	EncodingJSON Encoding = 0
	// EncodingMsgpack: binaryEntry, the byte 1, one byte of CommandType,
	// then the body in msgpack: a map keyed by the JSON field names,
	// fields omitted as JSON omits them, times as msgpack timestamps
	// (UTC).
	EncodingMsgpack Encoding = 1
)

// binaryEntry is the first byte of an entry in a binary encoding: the
// command type 0, which no command has. A peer of a version that knows no
// binary encoding reads it as an unknown command type without
// IgnoreUnknownFlag and stops with its message: this peer is older than
// the leader; upgrade it. The second byte is the Encoding.
const binaryEntry byte = 0

// binaryHeader is the length of a binary entry's header: binaryEntry, the
// Encoding, the CommandType.
const binaryHeader = 3

var encodingNames = map[Encoding]string{EncodingJSON: "json", EncodingMsgpack: "msgpack"}

// String returns the encoding's name.
func (e Encoding) String() string {
	if n, ok := encodingNames[e]; ok {
		return n
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Encodings returns the encodings this peer reads, in ascending order.
func Encodings() []Encoding { return []Encoding{EncodingJSON, EncodingMsgpack} }

// KnownEncodings lists the encodings this peer reads as KnownCommands
// lists command types ("0-1"): what a peer advertises in gossip.
func KnownEncodings() string {
	encs := Encodings()
	vals := make([]uint8, len(encs))
	for i, e := range encs {
		vals[i] = uint8(e)
	}
	return rangeList(vals)
}

// KnownEncodingsBefore is the list of the peers of versions before the
// binary encodings, which advertise none: JSON only.
const KnownEncodingsBefore = "0"

// EncodingKnownIn reports whether list, as KnownEncodings writes it,
// names e. A peer that advertises no list (every version before the
// binary encodings) reads KnownEncodingsBefore.
func EncodingKnownIn(list string, e Encoding) bool { return listHas(list, uint8(e)) }

// EncodeAs returns the log entry for c in encoding e. A command holding
// what JSON does not carry as it is (text that is not UTF-8, a float that
// is not finite, a time not in UTC or outside years 0 to 9999) is encoded in JSON
// whatever e, so that every peer stores what it always stored (JSON
// writes U+FFFD for the text) or the command is refused as before.
func EncodeAs(c Command, e Encoding) ([]byte, error) {
	switch e {
	case EncodingJSON:
		return Encode(c)
	case EncodingMsgpack:
	default:
		return nil, fmt.Errorf("%w: entry encoding %s is unknown", ErrInvalid, e)
	}
	if c == nil || reflect.ValueOf(c).IsNil() {
		return nil, fmt.Errorf("%w: cannot encode a nil command", ErrInvalid)
	}
	t := c.Type()
	spec, ok := registry[t]
	v := reflect.ValueOf(c).Elem()
	if !ok || v.Type() != spec.typ {
		return nil, fmt.Errorf("%w: %d (%T): register the command before encoding it", ErrUnknownCommand, uint8(t), c)
	}
	w := &mpWriter{b: make([]byte, 0, 256)}
	w.b = append(w.b, binaryEntry, byte(e), byte(t))
	if err := spec.mp.enc(w, v); err != nil {
		if errors.Is(err, errNotJSONSafe) {
			return Encode(c)
		}
		return nil, fmt.Errorf("encode %s: %w", t, err)
	}
	if spare := cap(w.b) - len(w.b); spare > 1024 && spare > len(w.b)/4 {
		return bytes.Clone(w.b), nil // raft keeps recent entries: not twice their size
	}
	return w.b, nil
}

// EntryEncoding returns the encoding and command type of a log entry,
// without decoding its body.
func EntryEncoding(data []byte) (Encoding, CommandType, error) {
	switch {
	case len(data) == 0:
		return 0, 0, fmt.Errorf("%w: empty log entry carries no command type", ErrInvalid)
	case data[0] != binaryEntry:
		return EncodingJSON, CommandType(data[0]), nil
	case len(data) < binaryHeader:
		return 0, 0, fmt.Errorf("%w: binary log entry of %d bytes has no header", ErrInvalid, len(data))
	}
	e := Encoding(data[1])
	if _, ok := encodingNames[e]; !ok || e == EncodingJSON {
		return e, 0, fmt.Errorf("%w: entry encoding %d: this peer is older than the leader", ErrUnknownEncoding, data[1])
	}
	return e, CommandType(data[2]), nil
}

// decodeBinary decodes the body of a binary entry of encoding e into c,
// a fresh command of spec.
func decodeBinary(e Encoding, body []byte, spec commandSpec, c Command) error {
	switch e {
	case EncodingMsgpack:
		return decodeMsgpack(body, spec.mp, c)
	}
	return fmt.Errorf("%w: %s", ErrUnknownEncoding, e)
}
