package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Encode returns the log entry for c in EncodingJSON: one byte of c.Type()
// followed by the JSON body of c. c must be a pointer to one of this
// package's commands. EncodeAs writes the other encodings.
func Encode(c Command) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: cannot encode a nil command", ErrInvalid)
	}
	t := c.Type()
	if _, ok := registry[t]; !ok {
		return nil, fmt.Errorf("%w: %d (%T): register the command before encoding it", ErrUnknownCommand, uint8(t), c)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", t, err)
	}
	out := make([]byte, 0, 1+len(body))
	out = append(out, byte(t))
	return append(out, body...), nil
}

// Decode parses a log entry produced by Encode or EncodeAs, in any
// encoding this peer reads. An unknown type yields an error wrapping
// ErrUnknownCommand, an unknown encoding one wrapping ErrUnknownEncoding;
// a malformed entry yields an error wrapping ErrInvalid.
func Decode(data []byte) (Command, error) {
	e, t, err := EntryEncoding(data)
	if err != nil {
		return nil, err
	}
	spec, ok := registry[t]
	if !ok {
		return nil, fmt.Errorf("%w: %d (ignorable: %t)", ErrUnknownCommand, uint8(t), t.Ignorable())
	}
	c := spec.new()
	if e == EncodingJSON {
		err = json.Unmarshal(data[1:], c)
	} else {
		err = decodeBinary(e, data[binaryHeader:], spec, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s %s body: %w", ErrInvalid, spec.name, e, err)
	}
	return c, nil
}

// IsIgnorable reports whether the entry's command type carries
// IgnoreUnknownFlag, so that a peer that does not know it may skip it.
// An entry in an unknown encoding is never ignorable.
func IsIgnorable(data []byte) bool {
	_, t, err := EntryEncoding(data)
	return err == nil && t.Ignorable()
}

// isUnknown reports whether err came from Decode meeting an unknown type.
func isUnknown(err error) bool { return errors.Is(err, ErrUnknownCommand) }
