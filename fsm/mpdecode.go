package fsm

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"time"
	"unicode/utf8"
)

// mpReader reads msgpack from b.
type mpReader struct {
	b []byte
	i int
}

// decodeMsgpack decodes body, exactly one msgpack value, into the value
// p points to (a fresh command), whose plan is plan.
func decodeMsgpack(body []byte, plan *mpType, p any) error {
	v := reflect.ValueOf(p).Elem()
	r := mpReader{b: body}
	if err := plan.dec(&r, v); err != nil {
		return err
	}
	if r.i != len(body) {
		return fmt.Errorf("%d bytes after the msgpack body", len(body)-r.i)
	}
	return nil
}

func (r *mpReader) peek() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errMsgpackShort
	}
	return r.b[r.i], nil
}

// isNil consumes a nil if one is next.
func (r *mpReader) isNil() bool {
	if r.i < len(r.b) && r.b[r.i] == 0xc0 {
		r.i++
		return true
	}
	return false
}

func (r *mpReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.i {
		return nil, errMsgpackShort
	}
	p := r.b[r.i : r.i+n]
	r.i += n
	return p, nil
}

func (r *mpReader) be(n int) (uint64, error) {
	p, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// head reads the header of a map (pairs) or an array; its count must fit
// in what is left of the body.
func (r *mpReader) head(isMap bool) (int, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	r.i++
	var n uint64
	fix, b16, b32, what, per := byte(0x90), byte(0xdc), byte(0xdd), "an array", 1
	if isMap {
		fix, b16, b32, what, per = 0x80, 0xde, 0xdf, "a map", 2
	}
	switch {
	case c&0xf0 == fix:
		n = uint64(c & 0x0f)
	case c == b16:
		n, err = r.be(2)
	case c == b32:
		n, err = r.be(4)
	default:
		return 0, errType(what, c)
	}
	if err != nil {
		return 0, err
	}
	if n*uint64(per) > uint64(len(r.b)-r.i) {
		return 0, errMsgpackShort
	}
	return int(n), nil
}

// strBytes reads a string, which must be UTF-8; the bytes are the body's.
func (r *mpReader) strBytes() ([]byte, error) {
	c, err := r.peek()
	if err != nil {
		return nil, err
	}
	r.i++
	var n uint64
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, err = r.be(1)
	case c == 0xda:
		n, err = r.be(2)
	case c == 0xdb:
		n, err = r.be(4)
	default:
		return nil, errType("a string", c)
	}
	if err != nil {
		return nil, err
	}
	p, err := r.take(int(min(n, math.MaxInt32)))
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(p) {
		return nil, fmt.Errorf("a string that is not UTF-8: %w", errNotJSONSafe)
	}
	return p, nil
}

// skip passes over one value of a key this version does not know.
func (r *mpReader) skip() error {
	s := mpScanner{b: r.b, i: r.i}
	if err := s.value(0); err != nil {
		return err
	}
	r.i = s.i
	return nil
}

func decString(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	p, err := r.strBytes()
	if err != nil {
		return err
	}
	v.SetString(string(p))
	return nil
}

func decBool(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c != 0xc2 && c != 0xc3 {
		return errType("a bool", c)
	}
	r.i++
	v.SetBool(c == 0xc3)
	return nil
}

// integer reads any msgpack integer: the value, and whether it is
// negative (then as an int64).
func (r *mpReader) integer() (u uint64, neg bool, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, false, err
	}
	r.i++
	switch {
	case c <= 0x7f:
		return uint64(c), false, nil
	case c >= 0xe0:
		return uint64(int64(int8(c))), true, nil
	case c >= 0xcc && c <= 0xcf:
		u, err = r.be(1 << (c - 0xcc))
		return u, false, err
	case c >= 0xd0 && c <= 0xd3:
		n := 1 << (c - 0xd0)
		u, err = r.be(n)
		shift := 64 - 8*n
		i := int64(u<<shift) >> shift // sign-extend
		return uint64(i), i < 0, err
	}
	return 0, false, errType("an integer", c)
}

func decInt(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	u, neg, err := r.integer()
	if err != nil {
		return err
	}
	i := int64(u)
	if !neg && u > math.MaxInt64 || v.OverflowInt(i) {
		return fmt.Errorf("integer %d overflows %s", u, v.Type())
	}
	v.SetInt(i)
	return nil
}

func decUint(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	u, neg, err := r.integer()
	if err != nil {
		return err
	}
	if neg || v.OverflowUint(u) {
		return fmt.Errorf("integer %d does not fit %s", int64(u), v.Type())
	}
	v.SetUint(u)
	return nil
}

func decFloat(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	c, err := r.peek()
	if err != nil {
		return err
	}
	r.i++
	var f float64
	switch c {
	case 0xca:
		u, err := r.be(4)
		if err != nil {
			return err
		}
		f = float64(math.Float32frombits(uint32(u)))
	case 0xcb:
		u, err := r.be(8)
		if err != nil {
			return err
		}
		f = math.Float64frombits(u)
	default:
		return errType("a float", c)
	}
	if err := finite(f); err != nil {
		return err
	}
	if v.OverflowFloat(f) {
		return fmt.Errorf("float %v overflows %s", f, v.Type())
	}
	v.SetFloat(f)
	return nil
}

// decTime reads a msgpack timestamp as a UTC time (nil: the zero time).
func decTime(r *mpReader, v reflect.Value) error {
	if r.isNil() {
		return nil
	}
	start := r.i
	s := mpScanner{b: r.b, i: r.i}
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c != 0xd6 && c != 0xd7 && c != 0xc7 {
		return errType("a timestamp", c)
	}
	if err := s.value(0); err != nil { // checks the extension, its type, nanoseconds and year
		return err
	}
	r.i = s.i
	p := r.b[start:r.i]
	var sec int64
	var nsec uint32
	switch c {
	case 0xd6:
		sec = int64(binary.BigEndian.Uint32(p[2:]))
	case 0xd7:
		x := binary.BigEndian.Uint64(p[2:])
		sec, nsec = int64(x&(1<<34-1)), uint32(x>>34)
	default:
		nsec, sec = binary.BigEndian.Uint32(p[3:]), int64(binary.BigEndian.Uint64(p[7:]))
	}
	t := time.Unix(sec, int64(nsec)).UTC()
	if v.CanAddr() {
		*v.Addr().Interface().(*time.Time) = t
	} else {
		v.Set(reflect.ValueOf(t))
	}
	return nil
}

func ptrDec(elem *mpType) func(*mpReader, reflect.Value) error {
	return func(r *mpReader, v reflect.Value) error {
		if r.isNil() {
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := elem.dec(r, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
}

func sliceDec(elem *mpType) func(*mpReader, reflect.Value) error {
	return func(r *mpReader, v reflect.Value) error {
		if r.isNil() {
			return nil
		}
		n, err := r.head(false)
		if err != nil {
			return err
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			if err := elem.dec(r, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
}

func (r *mpReader) strStrMap() (map[string]string, error) {
	if r.isNil() {
		return nil, nil
	}
	n, err := r.head(true)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, n)
	for range n {
		k, err := r.strBytes()
		if err != nil {
			return nil, err
		}
		if r.isNil() {
			m[string(k)] = ""
			continue
		}
		val, err := r.strBytes()
		if err != nil {
			return nil, err
		}
		m[string(k)] = string(val)
	}
	return m, nil
}

func (r *mpReader) strInt64Map() (map[string]int64, error) {
	if r.isNil() {
		return nil, nil
	}
	n, err := r.head(true)
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64, n)
	for range n {
		k, err := r.strBytes()
		if err != nil {
			return nil, err
		}
		if r.isNil() {
			m[string(k)] = 0
			continue
		}
		u, neg, err := r.integer()
		if err != nil {
			return nil, err
		}
		if !neg && u > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d overflows int64", u)
		}
		m[string(k)] = int64(u)
	}
	return m, nil
}

func mapDec(t reflect.Type, elem *mpType) func(*mpReader, reflect.Value) error {
	set := func(v reflect.Value, m any, isNil bool) {
		if isNil {
			return
		}
		mv := reflect.ValueOf(m)
		if mv.Type() != t {
			mv = mv.Convert(t)
		}
		v.Set(mv)
	}
	switch {
	case t.ConvertibleTo(strStrMap):
		return func(r *mpReader, v reflect.Value) error {
			m, err := r.strStrMap()
			set(v, m, m == nil)
			return err
		}
	case t.ConvertibleTo(strInt64Map):
		return func(r *mpReader, v reflect.Value) error {
			m, err := r.strInt64Map()
			set(v, m, m == nil)
			return err
		}
	case t == strStrInt64Map:
		return func(r *mpReader, v reflect.Value) error {
			if r.isNil() {
				return nil
			}
			n, err := r.head(true)
			if err != nil {
				return err
			}
			m := make(map[string]map[string]int64, n)
			for range n {
				k, err := r.strBytes()
				if err != nil {
					return err
				}
				inner, err := r.strInt64Map()
				if err != nil {
					return err
				}
				m[string(k)] = inner
			}
			v.Set(reflect.ValueOf(m))
			return nil
		}
	}
	return func(r *mpReader, v reflect.Value) error {
		if r.isNil() {
			return nil
		}
		n, err := r.head(true)
		if err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, n)
		for range n {
			k, err := r.strBytes()
			if err != nil {
				return err
			}
			val := reflect.New(t.Elem()).Elem()
			if err := elem.dec(r, val); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(string(k)).Convert(t.Key()), val)
		}
		v.Set(m)
		return nil
	}
}

// structDec reads a map into a struct: a key names a field by its JSON
// name, a key no field has is skipped (a newer version's field, as JSON
// skips it). The writer's order is tried first.
func structDec(t reflect.Type, fields []mpField) func(*mpReader, reflect.Value) error {
	byName := make(map[string]int, len(fields))
	for i, f := range fields {
		byName[f.name] = i
	}
	return func(r *mpReader, v reflect.Value) error {
		if r.isNil() {
			return nil
		}
		n, err := r.head(true)
		if err != nil {
			return err
		}
		next := 0
		for range n {
			k, err := r.strBytes()
			if err != nil {
				return err
			}
			i := -1
			for ; next < len(fields); next++ {
				if fields[next].name == string(k) {
					i = next
					break
				}
			}
			if i < 0 {
				j, ok := byName[string(k)]
				if !ok {
					if err := r.skip(); err != nil {
						return err
					}
					next = 0
					continue
				}
				i = j
			}
			next = i + 1
			f := &fields[i]
			if err := f.typ.dec(r, fieldOf(v, f.index)); err != nil {
				return fmt.Errorf("%s.%s: %w", t.Name(), f.name, err)
			}
		}
		return nil
	}
}
