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
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		if c.Type() != CommandType(data[0]) {
			t.Fatalf("decoded type %d from byte %d", c.Type(), data[0])
		}
		enc, err := Encode(c)
		if err != nil {
			return // e.g. a year JSON cannot carry
		}
		c2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		enc2, err := Encode(c2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%q\n%q (%v)", enc, enc2, err)
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
