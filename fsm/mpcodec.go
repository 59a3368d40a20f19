package fsm

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The msgpack of EncodingMsgpack, written and read through a plan built
// once per Go type from its JSON shape: a struct is a map keyed by the
// JSON field names (embedded structs inlined, "-" skipped), a field
// omitted when JSON omits it (omitempty, omitzero), nil slices, maps and
// pointers as nil, empty ones as empty, times as msgpack timestamps. So
// an entry decodes to the value its JSON decodes to, keys a version does
// not know are skipped as JSON skips them, and the bytes are standard
// msgpack (TestMsgpackInterop reads and writes them with
// hashicorp/go-msgpack). Only what JSON carries as it is goes this way:
// text that is not UTF-8, a float that is not finite, a time that is not
// UTC or outside years 0 to 9999 make the writer fail with
// errNotJSONSafe (the command is then written in JSON) and the reader
// refuse the entry.

// mpType writes and reads one Go type.
type mpType struct {
	enc func(w *mpWriter, v reflect.Value) error
	dec func(r *mpReader, v reflect.Value) error // v is settable and holds the zero value
	// empty reports whether JSON's omitempty omits v.
	empty func(v reflect.Value) bool
}

// mpField is one field of a struct as JSON names it.
type mpField struct {
	name      string
	index     []int // reflect's FieldByIndex path (embedded structs inlined)
	typ       *mpType
	omitEmpty bool
	omitZero  bool
	isZero    func(v reflect.Value) bool
}

var (
	// mpTypes are the plans built so far: written only while commands
	// register (init functions), read-only afterwards.
	mpTypes  = map[reflect.Type]*mpType{}
	timeType = reflect.TypeFor[time.Time]()
)

// mpTypeOf returns the plan of t, building it if need be: register calls
// it for every command type, so that a type the plan cannot carry as
// JSON carries it stops the program at start, as any registration
// mistake does. Only init functions call it.
func mpTypeOf(t reflect.Type) *mpType {
	building := map[reflect.Type]*mpType{}
	p := buildMPType(t, building)
	for t, p := range building {
		mpTypes[t] = p
	}
	return p
}

// buildMPType builds t's plan, reusing those of mpTypes; building holds
// the plans it makes (those under way among them, so that a type that
// holds itself through a pointer, slice or map reuses its own).
func buildMPType(t reflect.Type, building map[reflect.Type]*mpType) *mpType {
	if p, ok := mpTypes[t]; ok {
		return p
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &mpType{}
	building[t] = p
	switch {
	case t == timeType:
		p.enc, p.dec, p.empty = encTime, decTime, never
	case t.Kind() == reflect.String:
		p.enc, p.dec, p.empty = encString, decString, lenZero
	case t.Kind() == reflect.Bool:
		p.enc, p.dec, p.empty = encBool, decBool, func(v reflect.Value) bool { return !v.Bool() }
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		p.enc, p.dec, p.empty = encInt, decInt, func(v reflect.Value) bool { return v.Int() == 0 }
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		p.enc, p.dec, p.empty = encUint, decUint, func(v reflect.Value) bool { return v.Uint() == 0 }
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		p.enc, p.dec, p.empty = encFloat, decFloat, func(v reflect.Value) bool { return v.Float() == 0 }
	case t.Kind() == reflect.Pointer:
		elem := buildMPType(t.Elem(), building)
		p.enc, p.dec, p.empty = ptrEnc(elem), ptrDec(elem), isNil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		elem := buildMPType(t.Elem(), building)
		p.enc, p.dec, p.empty = sliceEnc(t, elem), sliceDec(elem), lenZero
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		elem := buildMPType(t.Elem(), building)
		p.enc, p.dec, p.empty = mapEnc(t, elem), mapDec(t, elem), lenZero
	case t.Kind() == reflect.Struct:
		fields := structFields(t, building)
		p.enc, p.dec, p.empty = structEnc(fields), structDec(t, fields), never
	default:
		panic(fmt.Sprintf("fsm: %s cannot be written in msgpack as JSON writes it", t))
	}
	return p
}

// structFields lists t's fields as encoding/json names them. Two fields
// of one name are refused (JSON would keep one of them by its rules).
func structFields(t reflect.Type, building map[reflect.Type]*mpType) []mpField {
	var out []mpField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			path := append(slices.Clone(index), i)
			if f.Anonymous && name == "" {
				if f.Type.Kind() != reflect.Struct {
					panic(fmt.Sprintf("fsm: %s embeds %s, which msgpack does not inline as JSON does", t, f.Type))
				}
				walk(f.Type, path)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if slices.Contains(strings.Split(opts, ","), "string") {
				panic(fmt.Sprintf("fsm: %s.%s: the string option of JSON has no msgpack form", t, f.Name))
			}
			mf := mpField{name: name, index: path, typ: buildMPType(f.Type, building),
				omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
				omitZero:  slices.Contains(strings.Split(opts, ","), "omitzero")}
			if mf.omitZero {
				mf.isZero = zeroFunc(f.Type)
			}
			for _, o := range out {
				if o.name == name {
					panic(fmt.Sprintf("fsm: %s has two fields named %q in JSON", t, name))
				}
			}
			out = append(out, mf)
		}
	}
	walk(t, nil)
	if len(out) > 64 {
		panic(fmt.Sprintf("fsm: %s has %d fields, more than the 64 the msgpack writer counts", t, len(out)))
	}
	return out
}

// zeroFunc is omitzero's test: the type's IsZero method when it has one
// (time.Time), reflect's otherwise.
func zeroFunc(t reflect.Type) func(reflect.Value) bool {
	if m, ok := t.MethodByName("IsZero"); ok && m.Type.NumIn() == 1 && m.Type.NumOut() == 1 && m.Type.Out(0).Kind() == reflect.Bool {
		if t == timeType {
			return func(v reflect.Value) bool { return timeOf(v).IsZero() }
		}
		panic(fmt.Sprintf("fsm: omitzero of %s, whose IsZero msgpack does not call", t))
	}
	return reflect.Value.IsZero
}

func never(reflect.Value) bool     { return false }
func lenZero(v reflect.Value) bool { return v.Len() == 0 }
func isNil(v reflect.Value) bool   { return v.IsNil() }
func errType(want string, c byte) error {
	return fmt.Errorf("msgpack 0x%02x where %s was expected", c, want)
}

// mpWriter appends msgpack to b.
type mpWriter struct {
	b    []byte
	keys []string // scratch for sorting map keys
}

// room makes room for n more bytes, doubling the buffer when it grows
// (append's own growth is gentler for large buffers: an entry of 40 KB
// would be copied some fifteen times).
func (w *mpWriter) room(n int) {
	if cap(w.b)-len(w.b) < n {
		w.b = slices.Grow(w.b, max(n, cap(w.b)))
	}
}

func (w *mpWriter) nil() { w.room(1); w.b = append(w.b, 0xc0) }

func (w *mpWriter) head(n int, fix, b16, b32 byte) {
	w.room(5)
	switch {
	case n < 16:
		w.b = append(w.b, fix|byte(n))
	case n <= math.MaxUint16:
		w.b = append(w.b, b16, byte(n>>8), byte(n))
	default:
		w.b = append(w.b, b32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (w *mpWriter) str(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("a string that is not UTF-8: %w", errNotJSONSafe)
	}
	w.room(5 + len(s))
	switch n := len(s); {
	case n < 32:
		w.b = append(w.b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		w.b = append(w.b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		w.b = append(w.b, 0xda, byte(n>>8), byte(n))
	default:
		w.b = append(w.b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	w.b = append(w.b, s...)
	return nil
}

func (w *mpWriter) int(i int64) {
	w.room(9)
	switch {
	case i >= 0:
		w.uint(uint64(i))
	case i >= -32:
		w.b = append(w.b, byte(i))
	case i >= math.MinInt8:
		w.b = append(w.b, 0xd0, byte(i))
	case i >= math.MinInt16:
		w.b = append(w.b, 0xd1, byte(i>>8), byte(i))
	case i >= math.MinInt32:
		w.b = append(w.b, 0xd2, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
	default:
		w.b = append(w.b, 0xd3)
		w.b = appendBE(w.b, uint64(i), 8)
	}
}

func (w *mpWriter) uint(u uint64) {
	w.room(9)
	switch {
	case u <= 0x7f:
		w.b = append(w.b, byte(u))
	case u <= math.MaxUint8:
		w.b = append(w.b, 0xcc, byte(u))
	case u <= math.MaxUint16:
		w.b = append(w.b, 0xcd, byte(u>>8), byte(u))
	case u <= math.MaxUint32:
		w.b = append(w.b, 0xce)
		w.b = appendBE(w.b, u, 4)
	default:
		w.b = append(w.b, 0xcf)
		w.b = appendBE(w.b, u, 8)
	}
}

func appendBE(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func encString(w *mpWriter, v reflect.Value) error { return w.str(v.String()) }

func encBool(w *mpWriter, v reflect.Value) error {
	w.room(1)
	if v.Bool() {
		w.b = append(w.b, 0xc3)
	} else {
		w.b = append(w.b, 0xc2)
	}
	return nil
}

func encInt(w *mpWriter, v reflect.Value) error  { w.int(v.Int()); return nil }
func encUint(w *mpWriter, v reflect.Value) error { w.uint(v.Uint()); return nil }

func encFloat(w *mpWriter, v reflect.Value) error {
	f := v.Float()
	if err := finite(f); err != nil {
		return err
	}
	w.room(9)
	if v.Kind() == reflect.Float32 {
		w.b = append(w.b, 0xca)
		w.b = appendBE(w.b, uint64(math.Float32bits(float32(f))), 4)
		return nil
	}
	w.b = append(w.b, 0xcb)
	w.b = appendBE(w.b, math.Float64bits(f), 8)
	return nil
}

// timeOf returns the time v holds, through its address when it has one
// (boxing a time.Time allocates).
func timeOf(v reflect.Value) time.Time {
	if v.CanAddr() {
		return *v.Addr().Interface().(*time.Time)
	}
	return v.Interface().(time.Time)
}

// encTime writes a time as the msgpack timestamp (nil for the zero time,
// as hashicorp/go-msgpack writes it).
func encTime(w *mpWriter, v reflect.Value) error {
	t := timeOf(v)
	if t.IsZero() {
		w.nil()
		return nil
	}
	if t.Location() != time.UTC {
		return fmt.Errorf("a time in %s: %w", t.Location(), errNotJSONSafe)
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Errorf("a time of year %d: %w", y, errNotJSONSafe)
	}
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	w.room(15)
	switch {
	case sec >= 0 && sec <= math.MaxUint32 && nsec == 0:
		w.b = append(w.b, 0xd6, 0xff)
		w.b = appendBE(w.b, uint64(sec), 4)
	case sec >= 0 && sec < 1<<34:
		w.b = append(w.b, 0xd7, 0xff)
		w.b = appendBE(w.b, nsec<<34|uint64(sec), 8)
	default:
		w.b = append(w.b, 0xc7, 12, 0xff)
		w.b = appendBE(w.b, nsec, 4)
		w.b = appendBE(w.b, uint64(sec), 8)
	}
	return nil
}

func ptrEnc(elem *mpType) func(*mpWriter, reflect.Value) error {
	return func(w *mpWriter, v reflect.Value) error {
		if v.IsNil() {
			w.nil()
			return nil
		}
		return elem.enc(w, v.Elem())
	}
}

func sliceEnc(t reflect.Type, elem *mpType) func(*mpWriter, reflect.Value) error {
	if t.Elem().Kind() == reflect.String {
		return func(w *mpWriter, v reflect.Value) error {
			if v.IsNil() {
				w.nil()
				return nil
			}
			w.head(v.Len(), 0x90, 0xdc, 0xdd)
			for i := range v.Len() {
				if err := w.str(v.Index(i).String()); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return func(w *mpWriter, v reflect.Value) error {
		if v.IsNil() {
			w.nil()
			return nil
		}
		w.head(v.Len(), 0x90, 0xdc, 0xdd)
		for i := range v.Len() {
			if err := elem.enc(w, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	}
}

// Maps the plans write and read without reflection (claims, quotas,
// metadata, properties): their underlying types.
var (
	strStrMap      = reflect.TypeFor[map[string]string]()
	strInt64Map    = reflect.TypeFor[map[string]int64]()
	strStrInt64Map = reflect.TypeFor[map[string]map[string]int64]()
)

// sortedKeysOf appends m's keys to w's scratch, sorted, and returns them
// and where they start: w.keys[:start] gives the scratch back.
func sortedKeysOf[V any](w *mpWriter, m map[string]V) (keys []string, start int) {
	start = len(w.keys)
	for k := range m {
		w.keys = append(w.keys, k)
	}
	keys = w.keys[start:]
	slices.Sort(keys)
	return keys, start
}

func (w *mpWriter) strStrMap(m map[string]string) error {
	if m == nil {
		w.nil()
		return nil
	}
	keys, start := sortedKeysOf(w, m)
	defer func() { w.keys = w.keys[:start] }()
	w.head(len(keys), 0x80, 0xde, 0xdf)
	for _, k := range keys {
		if err := w.str(k); err != nil {
			return err
		}
		if err := w.str(m[k]); err != nil {
			return err
		}
	}
	return nil
}

func (w *mpWriter) strInt64Map(m map[string]int64) error {
	if m == nil {
		w.nil()
		return nil
	}
	keys, start := sortedKeysOf(w, m)
	defer func() { w.keys = w.keys[:start] }()
	w.head(len(keys), 0x80, 0xde, 0xdf)
	for _, k := range keys {
		if err := w.str(k); err != nil {
			return err
		}
		w.int(m[k])
	}
	return nil
}

// asType returns v as a value of type t, whose underlying type is v's
// (converting only a named type: a conversion copies).
func asType(v reflect.Value, t reflect.Type) any {
	if v.Type() != t {
		v = v.Convert(t)
	}
	return v.Interface()
}

// mapEnc writes a map with its keys in order, as JSON does.
func mapEnc(t reflect.Type, elem *mpType) func(*mpWriter, reflect.Value) error {
	switch {
	case t.ConvertibleTo(strStrMap):
		return func(w *mpWriter, v reflect.Value) error { return w.strStrMap(asType(v, strStrMap).(map[string]string)) }
	case t.ConvertibleTo(strInt64Map):
		return func(w *mpWriter, v reflect.Value) error {
			return w.strInt64Map(asType(v, strInt64Map).(map[string]int64))
		}
	case t == strStrInt64Map:
		return func(w *mpWriter, v reflect.Value) error {
			m := v.Interface().(map[string]map[string]int64)
			if m == nil {
				w.nil()
				return nil
			}
			keys, start := sortedKeysOf(w, m)
			defer func() { w.keys = w.keys[:start] }()
			w.head(len(keys), 0x80, 0xde, 0xdf)
			for _, k := range keys {
				if err := w.str(k); err != nil {
					return err
				}
				if err := w.strInt64Map(m[k]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return func(w *mpWriter, v reflect.Value) error {
		if v.IsNil() {
			w.nil()
			return nil
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		w.head(len(keys), 0x80, 0xde, 0xdf)
		for _, k := range keys {
			if err := w.str(k.String()); err != nil {
				return err
			}
			if err := elem.enc(w, v.MapIndex(k)); err != nil {
				return err
			}
		}
		return nil
	}
}

func structEnc(fields []mpField) func(*mpWriter, reflect.Value) error {
	return func(w *mpWriter, v reflect.Value) error {
		n := 0
		var omitted uint64 // bit i: field i is omitted (structs have fewer than 64 fields)
		for i := range fields {
			if fields[i].omit(v) {
				omitted |= 1 << i
			} else {
				n++
			}
		}
		w.head(n, 0x80, 0xde, 0xdf)
		for i := range fields {
			if omitted&(1<<i) != 0 {
				continue
			}
			f := &fields[i]
			if err := w.str(f.name); err != nil {
				return err
			}
			if err := f.typ.enc(w, fieldOf(v, f.index)); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		return nil
	}
}

// omit reports whether JSON leaves f of struct v out.
func (f *mpField) omit(v reflect.Value) bool {
	if !f.omitEmpty && !f.omitZero {
		return false
	}
	fv := fieldOf(v, f.index)
	return f.omitEmpty && f.typ.empty(fv) || f.omitZero && f.isZero(fv)
}

func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}
