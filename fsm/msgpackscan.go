package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// errNotJSONSafe marks a msgpack body holding what the JSON encoding
// cannot carry as it is: text that is not UTF-8 (JSON writes U+FFFD for
// it), a float that is not finite or a time outside years 0 to 9999
// (JSON refuses both). The binary encoding carries exactly what JSON
// carries: the encoder leaves such a command to JSON, the decoder
// refuses such an entry.
var errNotJSONSafe = errors.New("holds what JSON cannot carry")

// maxMsgpackDepth bounds the nesting of a msgpack body (commands nest a
// handful of levels), so that a corrupt entry cannot exhaust the stack.
const maxMsgpackDepth = 32

// scanMsgpack checks that b is exactly one msgpack value, well formed,
// nested at most maxMsgpackDepth deep, whose strings are UTF-8, whose
// floats are finite, whose only extension is the timestamp (-1) of a
// year JSON writes, and whose containers announce no more items than b
// holds bytes. A violation of the last three wraps errNotJSONSafe.
func scanMsgpack(b []byte) error {
	s := mpScanner{b: b}
	if err := s.value(0); err != nil {
		return err
	}
	if s.i != len(b) {
		return fmt.Errorf("%d bytes after the msgpack body", len(b)-s.i)
	}
	return nil
}

type mpScanner struct {
	b []byte
	i int
}

var errMsgpackShort = errors.New("truncated msgpack body")

// take returns the next n bytes.
func (s *mpScanner) take(n int) ([]byte, error) {
	if n < 0 || n > len(s.b)-s.i {
		return nil, errMsgpackShort
	}
	p := s.b[s.i : s.i+n]
	s.i += n
	return p, nil
}

// length reads a big-endian length of size bytes.
func (s *mpScanner) length(size int) (int, error) {
	p, err := s.take(size)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range p {
		n = n<<8 | uint64(c)
	}
	if n > uint64(len(s.b)) {
		return 0, errMsgpackShort
	}
	return int(n), nil
}

func (s *mpScanner) value(depth int) error {
	if depth > maxMsgpackDepth {
		return fmt.Errorf("msgpack body nested deeper than %d", maxMsgpackDepth)
	}
	p, err := s.take(1)
	if err != nil {
		return err
	}
	c := p[0]
	switch {
	case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3: // fixint, nil, bool
		return nil
	case c&0xf0 == 0x80: // fixmap
		return s.items(2*int(c&0x0f), depth)
	case c&0xf0 == 0x90: // fixarray
		return s.items(int(c&0x0f), depth)
	case c&0xe0 == 0xa0: // fixstr
		return s.str(int(c & 0x1f))
	}
	switch c {
	case 0xcc, 0xd0: // uint8, int8
		_, err = s.take(1)
	case 0xcd, 0xd1:
		_, err = s.take(2)
	case 0xce, 0xd2:
		_, err = s.take(4)
	case 0xcf, 0xd3:
		_, err = s.take(8)
	case 0xca: // float32
		if p, err = s.take(4); err == nil {
			err = finite(float64(math.Float32frombits(binary.BigEndian.Uint32(p))))
		}
	case 0xcb: // float64
		if p, err = s.take(8); err == nil {
			err = finite(math.Float64frombits(binary.BigEndian.Uint64(p)))
		}
	case 0xd9, 0xda, 0xdb: // str8, str16, str32
		var n int
		if n, err = s.length(1 << (c - 0xd9)); err == nil {
			err = s.str(n)
		}
	case 0xc4, 0xc5, 0xc6: // bin8, bin16, bin32
		var n int
		if n, err = s.length(1 << (c - 0xc4)); err == nil {
			_, err = s.take(n)
		}
	case 0xdc, 0xdd: // array16, array32
		var n int
		if n, err = s.length(2 << (c - 0xdc)); err == nil {
			err = s.items(n, depth)
		}
	case 0xde, 0xdf: // map16, map32
		var n int
		if n, err = s.length(2 << (c - 0xde)); err == nil {
			err = s.items(2*n, depth)
		}
	case 0xd6: // fixext4: a timestamp of seconds
		err = s.timestamp(4)
	case 0xd7: // fixext8: a timestamp of 30-bit nanoseconds, 34-bit seconds
		err = s.timestamp(8)
	case 0xc7: // ext8: a timestamp of 32-bit nanoseconds, 64-bit seconds
		var n int
		if n, err = s.length(1); err == nil {
			if n != 12 {
				return fmt.Errorf("msgpack extension of %d bytes: %w", n, errNotJSONSafe)
			}
			err = s.timestamp(12)
		}
	default: // the other extensions, 0xc1 (never used)
		return fmt.Errorf("msgpack type 0x%02x: %w", c, errNotJSONSafe)
	}
	return err
}

// items scans n values.
func (s *mpScanner) items(n, depth int) error {
	if n > len(s.b)-s.i {
		return errMsgpackShort
	}
	for range n {
		if err := s.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

func (s *mpScanner) str(n int) error {
	p, err := s.take(n)
	if err != nil {
		return err
	}
	if !utf8.Valid(p) {
		return fmt.Errorf("a string that is not UTF-8: %w", errNotJSONSafe)
	}
	return nil
}

func finite(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("float %v: %w", f, errNotJSONSafe)
	}
	return nil
}

// timestamp scans the type (-1) and the n bytes of a msgpack timestamp.
func (s *mpScanner) timestamp(n int) error {
	p, err := s.take(1 + n)
	if err != nil {
		return err
	}
	if int8(p[0]) != -1 {
		return fmt.Errorf("msgpack extension %d: %w", int8(p[0]), errNotJSONSafe)
	}
	p = p[1:]
	var sec int64
	var nsec uint32
	switch n {
	case 4:
		sec = int64(binary.BigEndian.Uint32(p))
	case 8:
		v := binary.BigEndian.Uint64(p)
		sec, nsec = int64(v&(1<<34-1)), uint32(v>>34)
	case 12:
		nsec, sec = binary.BigEndian.Uint32(p), int64(binary.BigEndian.Uint64(p[4:]))
	}
	if nsec >= 1e9 {
		return fmt.Errorf("timestamp of %d nanoseconds: %w", nsec, errNotJSONSafe)
	}
	if y := time.Unix(sec, int64(nsec)).UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("timestamp of year %d: %w", y, errNotJSONSafe)
	}
	return nil
}
