package fsm

import (
	"bytes"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, c := range sampleCommands() {
		f.Add(mustEncode(f, c))
	}
	f.Add([]byte{})
	f.Add([]byte{byte(CmdCreateFlavor), '{'})
	f.Add([]byte{byte(CmdCreateFlavor), 'n', 'u', 'l', 'l'})
	f.Add([]byte{byte(IgnoreUnknownFlag | 3), '{', '}'})
	f.Add([]byte("\x03{\"flavor\":{\"id\":\"x\",\"extra_specs\":{\"\xff\":\"\xfe\"}},\"at\":\"2025-01-01T00:00:00+05:00\"}"))
	for _, c := range sampleCommands() {
		f.Add(mustEncodeAs(f, c, EncodingMsgpack))
	}
	f.Add([]byte{binaryEntry, byte(EncodingMsgpack), byte(CmdNoop), 0x80})
	f.Add([]byte{binaryEntry, byte(EncodingMsgpack), byte(CmdDeleteServer), 0x81, 0xa2, 'a', 't', 0xc7, 12, 0xff, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		if _, typ, _ := EntryEncoding(data); c.Type() != typ {
			t.Fatalf("decoded type %d from an entry of type %d", c.Type(), typ)
		}
		for _, e := range Encodings() {
			enc, err := EncodeAs(c, e)
			if err != nil {
				continue // e.g. a year JSON cannot carry
			}
			c2, err := Decode(enc)
			if err != nil {
				t.Fatalf("re-decoding %q: %v", enc, err)
			}
			enc2, err := EncodeAs(c2, e)
			if err != nil || !bytes.Equal(enc, enc2) {
				t.Fatalf("%s encoding is not stable:\n%q\n%q (%v)", e, enc, enc2, err)
			}
		}
		// Applying a decodable entry never panics.
		New().Apply(1, data)
	})
}

func FuzzRestore(f *testing.F) {
	f.Add(snapshotBytes(f, populated(f)))
	f.Add(snapshotBytes(f, New()))
	f.Add(stream(1, 3, record(RecordType(IgnoreUnknownFlag)|9, "xx")))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := populated(t)
		before := s.Digest()
		if err := s.Restore(bytes.NewReader(data)); err != nil {
			if s.Digest() != before {
				t.Fatal("failed restore changed the store")
			}
			return
		}
		// A restored store snapshots and restores to the same state.
		r := New()
		if err := r.Restore(bytes.NewReader(snapshotBytes(t, s))); err != nil {
			t.Fatal(err)
		}
		if r.Digest() != s.Digest() || r.AppliedIndex() != s.AppliedIndex() {
			t.Fatal("second round trip differs")
		}
	})
}
