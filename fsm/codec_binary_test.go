package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

func mustEncodeAs(tb testing.TB, c Command, e Encoding) []byte {
	tb.Helper()
	data, err := EncodeAs(c, e)
	if err != nil {
		tb.Fatalf("EncodeAs(%T, %s): %v", c, e, err)
	}
	return data
}

func mustDecode(tb testing.TB, data []byte) Command {
	tb.Helper()
	c, err := Decode(data)
	if err != nil {
		tb.Fatalf("Decode(%q): %v", data, err)
	}
	return c
}

// A type msgpack cannot write as JSON writes it (an interface, a []byte,
// an embedded pointer, a ",string" option, two fields of one JSON name)
// has no plan: registering a command that holds one stops the program.
func TestMsgpackPlanRefusesWhatJSONWritesOtherwise(t *testing.T) {
	type embedded struct{ A string }
	type inner struct {
		B string `json:"a"`
	}
	for _, v := range []any{
		struct{ X any }{},
		struct{ X []byte }{},
		struct{ *embedded }{},
		struct {
			X int `json:"x,string"`
		}{},
		struct {
			A string `json:"a"`
			inner
		}{},
		struct{ X map[int]string }{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%T has a plan", v)
				}
			}()
			buildMPType(reflect.TypeOf(v), map[reflect.Type]*mpType{}) // not mpTypeOf: the plans are init's
		}()
	}
	for _, typ := range CommandTypes() {
		if registry[typ].mp == nil {
			t.Errorf("%s has no plan", typ)
		}
	}
}

// The property of the binary encoding, for every command type, over
// random values: a command read from its JSON entry, written in msgpack
// and read back is deep-equal to it (times in UTC without monotonic
// reading, nil and empty slices and maps, nil pointers and pointers to
// zero values, embedded structs); and a command as the leader builds it
// reads back from its msgpack entry as from its JSON one.
func TestBinaryMatchesJSONForEveryCommand(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const perType = 300
	for _, typ := range CommandTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			binary := 0
			for range perType {
				c := registry[typ].new()
				fillRandom(r, reflect.ValueOf(c).Elem(), 0)

				viaJSON := mustDecode(t, mustEncode(t, c))
				bin := mustEncodeAs(t, viaJSON, EncodingMsgpack)
				if e, _, _ := EntryEncoding(bin); e == EncodingMsgpack {
					binary++
				} else if !holdsZonedTime(reflect.ValueOf(viaJSON)) {
					t.Fatalf("a command read from JSON was written in %s, not msgpack:\n%#v", e, viaJSON)
				}
				back := mustDecode(t, bin)
				if !reflect.DeepEqual(back, viaJSON) {
					t.Fatalf("JSON → command → msgpack → command differs:\n got %#v\nwant %#v", back, viaJSON)
				}
				if again := mustEncodeAs(t, back, EncodingMsgpack); !bytes.Equal(again, bin) {
					t.Fatalf("re-encoding differs:\n%x\n%x", again, bin)
				}
				if j1, j2 := mustEncode(t, back), mustEncode(t, viaJSON); !bytes.Equal(j1, j2) {
					t.Fatalf("JSON of the msgpack round trip differs:\n%s\n%s", j1, j2)
				}

				// As the leader writes it: whatever the command holds
				// (text that is not UTF-8, a time not in UTC), msgpack
				// or its fallback to JSON reads back as JSON does.
				direct := mustEncodeAs(t, c, EncodingMsgpack)
				if got := mustDecode(t, direct); !reflect.DeepEqual(got, viaJSON) {
					t.Fatalf("a command's msgpack entry reads back otherwise than its JSON one:\n got %#v\nwant %#v", got, viaJSON)
				}
			}
			if binary < perType/4 {
				t.Errorf("only %d of %d random commands were written in msgpack", binary, perType)
			}
		})
	}
}

// holdsZonedTime reports whether v holds a time in another zone than UTC
// (JSON keeps an entry's offset; msgpack writes UTC only).
func holdsZonedTime(v reflect.Value) bool {
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		return !t.IsZero() && t.Location() != time.UTC
	case v.Kind() == reflect.Pointer:
		return !v.IsNil() && holdsZonedTime(v.Elem())
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			if holdsZonedTime(v.Index(i)) {
				return true
			}
		}
	case v.Kind() == reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if holdsZonedTime(it.Value()) {
				return true
			}
		}
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && holdsZonedTime(v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// fillRandom sets v, settable and zero, to a random value: nil, empty and
// full slices and maps, nil pointers and pointers to zero values, times
// zero or in UTC with nanoseconds (now and then with a monotonic reading
// or another zone), text now and then not UTF-8.
func fillRandom(r *rand.Rand, v reflect.Value, depth int) {
	switch {
	case v.Type() == timeType:
		switch r.IntN(16) {
		case 0, 4:
		case 1:
			v.Set(reflect.ValueOf(time.Now())) // local, with a monotonic reading
		case 2:
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<37)-1<<35, r.Int64N(1e9)).In(time.FixedZone("X", 3600))))
		case 3:
			v.Set(reflect.ValueOf(time.Date(r.IntN(10000), time.Month(r.IntN(12)+1), 1, 0, 0, 0, r.IntN(1e9), time.UTC)))
		default:
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<34), r.Int64N(1e9)*int64(r.IntN(2))).UTC()))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomText(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		switch r.IntN(4) {
		case 0:
			v.SetInt(int64(-1) << (bits - 1)) // the smallest
		case 1:
			v.SetInt(int64(uint64(1)<<(bits-1) - 1)) // the largest
		default:
			v.SetInt(r.Int64N(2000) - 1000)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if r.IntN(4) == 0 {
			v.SetUint(uint64(math.MaxUint64) >> (64 - v.Type().Bits()))
		} else {
			v.SetUint(r.Uint64N(300))
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1, 0.1, -2.5e-300, 3.40282e+38, r.Float64()}[r.IntN(6)])
	case reflect.Pointer:
		if r.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			if r.IntN(4) > 0 {
				fillRandom(r, p.Elem(), depth+1)
			}
			v.Set(p)
		}
	case reflect.Slice:
		switch n := r.IntN(5); {
		case n == 0 || depth > 4:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				fillRandom(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		switch n := r.IntN(5); {
		case n == 0 || depth > 4:
		case n == 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			m := reflect.MakeMap(v.Type())
			for range n - 1 {
				k := reflect.New(v.Type().Key()).Elem()
				fillRandom(r, k, depth+1)
				e := reflect.New(v.Type().Elem()).Elem()
				fillRandom(r, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillRandom(r, f, depth+1)
			}
		}
	default:
		panic(fmt.Sprintf("fillRandom: %s", v.Type()))
	}
}

func randomText(r *rand.Rand) string {
	switch r.IntN(20) {
	case 0, 1:
		return ""
	case 2:
		return "bad\xff\xfeutf8"
	case 3:
		return "nœud-σ-節点 🚀 \x00\t\"\\<>&\u2028"
	case 4:
		return strings.Repeat("x", 31+r.IntN(3)) // around fixstr's bound
	case 5:
		return strings.Repeat("y", 255+r.IntN(3)) // around str8's
	case 6:
		if r.IntN(10) == 0 {
			return strings.Repeat("z", 65535+r.IntN(3)) // around str16's
		}
	}
	return fmt.Sprintf("v%d", r.IntN(1000))
}

// The cases the property above meets by chance, one by one.
func TestBinaryEdgeCases(t *testing.T) {
	mono := time.Now().UTC() // .UTC() strips the monotonic reading; Round(0) too
	f := false
	cases := []Command{
		&CreateServer{Meta: Meta{At: mono}, ID: "s1", Metadata: map[string]string{}, Networks: []Network{}, Avoid: nil},
		&CreateServer{Meta: Meta{At: t0}, ID: "s1", Metadata: map[string]string{"": ""}, Networks: []Network{{}},
			Claim: map[string]map[string]int64{"p": nil, "q": {}}},
		&SyncNodes{Meta: at(1), Upserts: []Node{}, Missing: []string{}, LegacyInventory: &f},
		&SyncNodes{Meta: at(1), Upserts: []Node{{UUID: "n", Properties: map[string]string{}, Traits: []string{},
			LastSeen: t0, ConflictSince: time.Time{}}}},
		&CreateServerSets{Meta: at(2), Sets: []ServerSet{{Fields: ServerFields{Description: ptr(""), Tags: []string{}}}}},
		&RequestServerActionWithID{RequestServerAction: RequestServerAction{Meta: Meta{At: t0, RequestID: "r", Bounded: true}, ID: "s1"}},
		&ReserveNodeAndTask{ReserveNode: ReserveNode{Meta: at(3), ServerID: "s"}, TaskState: ""},
		&FinishServerAction{Meta: at(4), ID: "s1", RequestedAt: time.Time{}},
		&FinishServerAction{Meta: at(4), ID: "s1", RequestedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)},
		&PurgeServers{Meta: at(5), Before: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		&PurgeServers{Meta: at(5), Before: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		&PurgeServers{Meta: at(5), Before: time.Unix(1<<32, 0).UTC()},
	}
	for _, c := range cases {
		want := mustDecode(t, mustEncode(t, c))
		bin := mustEncodeAs(t, c, EncodingMsgpack)
		if e, _, _ := EntryEncoding(bin); e != EncodingMsgpack {
			t.Errorf("%T written in %s", c, e)
			continue
		}
		if got := mustDecode(t, bin); !reflect.DeepEqual(got, want) {
			t.Errorf("%T:\n got %#v\nwant %#v", c, got, want)
		}
	}
}

// What JSON does not carry as it is, msgpack does not carry at all: such
// a command is written in JSON (which writes U+FFFD for text that is not
// UTF-8, and refuses a float that is not finite or a time out of its
// years), so that every peer stores what it always stored.
func TestBinaryLeavesToJSONWhatJSONAlters(t *testing.T) {
	for _, c := range []Command{
		&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "f\xff", Name: "x"}},
		&CreateServer{Meta: at(1), ID: "s", Metadata: map[string]string{"k": "\xc3"}},
		&CreateServer{Meta: Meta{At: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))}, ID: "s"},
		&CreateServer{Meta: Meta{At: time.Now()}, ID: "s"}, // time.Local
	} {
		data := mustEncodeAs(t, c, EncodingMsgpack)
		if !bytes.Equal(data, mustEncode(t, c)) {
			t.Errorf("%#v: written %q, want its JSON entry", c, data)
		}
	}
	for _, c := range []Command{
		&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "f", RxTxFactor: math.NaN()}},
		&CreateFlavor{Meta: at(1), Flavor: Flavor{ID: "f", RxTxFactor: math.Inf(1)}},
		&PurgeServers{Meta: at(1), Before: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		&PurgeServers{Meta: at(1), Before: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		_, jerr := Encode(c)
		if _, err := EncodeAs(c, EncodingMsgpack); err == nil || jerr == nil || err.Error() != jerr.Error() {
			t.Errorf("%#v: msgpack %v, JSON %v: want JSON's refusal", c, err, jerr)
		}
	}
}

// A key a newer version writes is skipped, as JSON skips it; a key
// missing leaves the field zero.
func TestBinaryUnknownAndMissingKeys(t *testing.T) {
	c := &DeleteServer{Meta: at(1), ID: "s1"}
	w := &mpWriter{}
	w.b = append(w.b, binaryEntry, byte(EncodingMsgpack), byte(CmdDeleteServer))
	w.head(4, 0x80, 0xde, 0xdf)
	for _, kv := range [][2]string{{"future", ""}, {"id", "s1"}, {"at", ""}} {
		_ = w.str(kv[0])
		switch kv[0] {
		case "future": // a map of an array, skipped whole
			w.head(1, 0x80, 0xde, 0xdf)
			_ = w.str("k")
			w.head(2, 0x90, 0xdc, 0xdd)
			w.int(-7)
			w.nil()
		case "at":
			_ = encTime(w, reflect.ValueOf(t0.Add(time.Second)))
		default:
			_ = w.str(kv[1])
		}
	}
	_ = w.str("request_id")
	w.nil()
	got := mustDecode(t, w.b)
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("got %#v, want %#v", got, c)
	}
}

func TestBinaryDecodeErrors(t *testing.T) {
	good := mustEncodeAs(t, &SetServerTask{Meta: at(1), ID: "s1", Host: "h1", Epoch: 3, TaskState: "spawning"}, EncodingMsgpack)
	withBody := func(body ...byte) []byte {
		return append([]byte{binaryEntry, byte(EncodingMsgpack), byte(CmdSetServerTask)}, body...)
	}
	invalid := map[string][]byte{
		"header only":      good[:2],
		"truncated":        good[:len(good)-1],
		"trailing byte":    append(bytes.Clone(good), 0xc0),
		"not a map":        withBody(0x91, 0xc0),
		"text not UTF-8":   withBody(0x81, 0xa2, 'i', 'd', 0xa1, 0xff),
		"key not UTF-8":    withBody(0x81, 0xa1, 0xff, 0xc0),
		"wrong type":       withBody(0x81, 0xa5, 'e', 'p', 'o', 'c', 'h', 0xa1, 'x'),
		"negative epoch":   withBody(0x81, 0xa5, 'e', 'p', 'o', 'c', 'h', 0xff),
		"map too long":     withBody(0xdf, 0xff, 0xff, 0xff, 0xff),
		"other extension":  withBody(0x81, 0xa2, 'a', 't', 0xd6, 0x05, 0, 0, 0, 0),
		"nanoseconds ≥ 1s": withBody(0x81, 0xa2, 'a', 't', 0xd7, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0),
		"deep skip": withBody(append(append([]byte{0x81, 0xa1, 'z'}, bytes.Repeat([]byte{0x91}, 100)...),
			0xc0)...),
	}
	for name, data := range invalid {
		if _, err := Decode(data); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Decode = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Decode([]byte{binaryEntry, 99, byte(CmdNoop), 0x80}); !errors.Is(err, ErrUnknownEncoding) {
		t.Errorf("unknown encoding: %v, want ErrUnknownEncoding", err)
	}
	if _, err := Decode([]byte{binaryEntry, byte(EncodingJSON), byte(CmdNoop), '{', '}'}); !errors.Is(err, ErrUnknownEncoding) {
		t.Errorf("JSON behind the binary marker: %v, want ErrUnknownEncoding", err)
	}
	if _, err := Decode([]byte{binaryEntry, byte(EncodingMsgpack), 99, 0x80}); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("unknown type: %v, want ErrUnknownCommand", err)
	}
	if !IsIgnorable([]byte{binaryEntry, byte(EncodingMsgpack), byte(IgnoreUnknownFlag | 9), 0x80}) ||
		IsIgnorable([]byte{binaryEntry, 99, byte(IgnoreUnknownFlag | 9), 0x80}) || IsIgnorable(good) {
		t.Error("IsIgnorable reads the type of a binary entry wrongly")
	}
}

// A peer that does not read an encoding stops at its first entry, with
// the message that says why, as at a command type it does not know; so
// does a peer of a version before the binary encodings, which reads the
// marker as the command type 0 (no command has it, and it carries no
// IgnoreUnknownFlag).
func TestApplyStopsAtAnUnknownEncoding(t *testing.T) {
	if _, ok := registry[CommandType(binaryEntry)]; ok || CommandType(binaryEntry).Ignorable() {
		t.Fatal("the binary marker is a command type, or an ignorable one")
	}
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, "entry encoding 9") || !strings.Contains(msg, "this peer is older than the leader; upgrade it") {
			t.Fatalf("Apply of an entry in an unknown encoding: %q", msg)
		}
	}()
	New().Apply(1, []byte{binaryEntry, 9, byte(CmdNoop), 0x80})
}

// A log whose entries are JSON up to some index and msgpack after it, or
// mixed at random, replays to the state the all-JSON log gives.
func TestReplayOfMixedEncodings(t *testing.T) {
	log := genLog(t, 5, 600)
	want := New()
	for i, e := range log {
		want.Apply(uint64(i+1), e)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for name, binary := range map[string]func(i int) bool{
		"switch at 300": func(i int) bool { return i >= 300 },
		"at random":     func(int) bool { return r.IntN(2) == 0 },
	} {
		s := New()
		converted := 0
		for i, e := range log {
			if binary(i) {
				if c, err := Decode(e); err == nil {
					e = mustEncodeAs(t, c, EncodingMsgpack)
					converted++
				}
			}
			s.Apply(uint64(i+1), e)
		}
		if converted < 100 {
			t.Fatalf("%s: %d entries in msgpack", name, converted)
		}
		if s.Digest() != want.Digest() {
			t.Errorf("%s: the log replays to another state", name)
		}
		if !bytes.Equal(snapshotBytes(t, s), snapshotBytes(t, want)) {
			t.Errorf("%s: the snapshots differ", name)
		}
	}
}

func TestEncodingLists(t *testing.T) {
	if got := KnownEncodings(); got != "0-1" {
		t.Errorf("KnownEncodings() = %q", got)
	}
	for _, c := range []struct {
		list string
		e    Encoding
		want bool
	}{{"0-1", EncodingMsgpack, true}, {"0", EncodingMsgpack, false}, {"0", EncodingJSON, true}, {"", EncodingJSON, false}} {
		if got := EncodingKnownIn(c.list, c.e); got != c.want {
			t.Errorf("EncodingKnownIn(%q, %s) = %t", c.list, c.e, got)
		}
	}
	if _, err := EncodeAs(&Noop{}, 7); !errors.Is(err, ErrInvalid) {
		t.Errorf("EncodeAs(unknown encoding) = %v", err)
	}
}

// The body of a msgpack entry is standard msgpack: hashicorp/go-msgpack
// (the msgpack of hashicorp/raft) reads it to the same command, and what
// it writes of a command (with the JSON field names) reads back here to
// the same command, nil and empty collections aside (it writes empty
// ones as nil where JSON would omit them).
func TestMsgpackInterop(t *testing.T) {
	h := &codec.MsgpackHandle{WriteExt: true}
	h.TypeInfos = codec.NewTypeInfos([]string{"json"})
	r := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for _, typ := range CommandTypes() {
		for range 50 {
			c := registry[typ].new()
			fillRandom(r, reflect.ValueOf(c).Elem(), 0)
			c = mustDecode(t, mustEncode(t, c))
			bin := mustEncodeAs(t, c, EncodingMsgpack)
			if e, _, _ := EntryEncoding(bin); e != EncodingMsgpack {
				continue
			}
			theirs := registry[typ].new()
			if err := codec.NewDecoderBytes(bin[binaryHeader:], h).Decode(theirs); err != nil {
				t.Fatalf("%s: go-msgpack cannot read %x: %v", typ, bin, err)
			}
			if !reflect.DeepEqual(normalizeEmpty(theirs), normalizeEmpty(c)) {
				t.Fatalf("%s: go-msgpack reads\n%#v\nfrom the entry of\n%#v", typ, theirs, c)
			}
			var body []byte
			if err := codec.NewEncoderBytes(&body, h).Encode(c); err != nil {
				t.Fatal(err)
			}
			ours := registry[typ].new()
			if err := decodeMsgpack(body, registry[typ].mp, ours); err != nil {
				t.Fatalf("%s: cannot read go-msgpack's %x: %v", typ, body, err)
			}
			if !reflect.DeepEqual(normalizeEmpty(ours), normalizeEmpty(c)) {
				t.Fatalf("%s: read\n%#v\nfrom go-msgpack's writing of\n%#v", typ, ours, c)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d commands checked", checked)
	}
}

// normalizeEmpty returns a copy of the command c points to with every
// empty slice and map made nil.
func normalizeEmpty(c any) any {
	v := reflect.New(reflect.TypeOf(c).Elem())
	v.Elem().Set(reflect.ValueOf(c).Elem())
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				p := reflect.New(v.Type().Elem())
				p.Elem().Set(v.Elem())
				walk(p.Elem())
				v.Set(p)
			}
		case reflect.Slice:
			if v.Len() == 0 {
				v.Set(reflect.Zero(v.Type()))
				return
			}
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(s, v)
			for i := range s.Len() {
				walk(s.Index(i))
			}
			v.Set(s)
		case reflect.Map:
			if v.Len() == 0 {
				v.Set(reflect.Zero(v.Type()))
				return
			}
			m := reflect.MakeMap(v.Type())
			for it := v.MapRange(); it.Next(); {
				e := reflect.New(v.Type().Elem()).Elem()
				e.Set(it.Value())
				walk(e)
				m.SetMapIndex(it.Key(), e)
			}
			v.Set(m)
		case reflect.Struct:
			if v.Type() == timeType {
				return
			}
			for i := range v.NumField() {
				if v.Field(i).CanSet() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(v.Elem())
	return v.Interface()
}

func TestEncodeAsRefusesWhatItCannotWrite(t *testing.T) {
	if _, err := EncodeAs((*Noop)(nil), EncodingMsgpack); !errors.Is(err, ErrInvalid) {
		t.Errorf("EncodeAs(nil *Noop) = %v, want ErrInvalid", err)
	}
	if _, err := EncodeAs(&bogusCommand{}, EncodingMsgpack); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("EncodeAs(unregistered) = %v, want ErrUnknownCommand", err)
	}
}
