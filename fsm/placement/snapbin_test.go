package placement

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// binRecords returns the binary records of s, each copied.
func binRecords(t testing.TB, s *Store) [][]byte {
	t.Helper()
	var recs [][]byte
	if err := s.EncodeRecords(func(rec []byte) error {
		recs = append(recs, bytes.Clone(rec))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func decodeBin(recs [][]byte) (*Store, error) {
	d := NewDecoder()
	for _, rec := range recs {
		if err := d.Add(rec); err != nil {
			return nil, err
		}
	}
	return d.Finish()
}

// The binary records carry the whole store: a store decoded from them
// has the same canonical encoding, the same derived indexes, and gives
// the same binary records again.
func TestBinaryRecordsRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		a := New()
		for _, o := range randomOps(rand.New(rand.NewPCG(seed, 99)), 400) {
			_ = o.apply(a)
		}
		recs := binRecords(t, a)
		r, err := decodeBin(recs)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkInvariants(t, r)
		if !bytes.Equal(encode(t, r), encode(t, a)) {
			t.Fatalf("seed %d: decoded store differs", seed)
		}
		again := binRecords(t, r)
		if len(again) != len(recs) {
			t.Fatalf("seed %d: %d records, then %d", seed, len(recs), len(again))
		}
		for i := range recs {
			if !bytes.Equal(recs[i], again[i]) {
				t.Fatalf("seed %d: record %d differs after a round trip", seed, i)
			}
		}
		for i, o := range randomOps(rand.New(rand.NewPCG(seed, 7)), 100) {
			if e1, e2 := o.apply(a), o.apply(r); errors.Is(e1, ErrNotFound) != errors.Is(e2, ErrNotFound) || (e1 == nil) != (e2 == nil) {
				t.Fatalf("seed %d op %d after decode: %v / %v", seed, i, e1, e2)
			}
		}
		if !Equal(a, r) {
			t.Fatalf("seed %d: stores diverged after decode", seed)
		}
	}
}

func TestBinaryRecordsRejected(t *testing.T) {
	s := New()
	mustCreate(t, s, 1, "", vmInv(8, 8192, 80), "CUSTOM_A")
	mustCreate(t, s, 2, rp(1), gold)
	if err := s.SetAllocations(cid(1), alloc("p", nil, allocs{rp(1): {"VCPU": 2}})); err != nil {
		t.Fatal(err)
	}
	recs := binRecords(t, s) // header, 2 providers, 1 consumer
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	with := func(i int, rec []byte) [][]byte {
		out := append([][]byte(nil), recs...)
		out[i] = rec
		return out
	}
	cases := map[string]struct {
		recs [][]byte
		want string
	}{
		"no header":          {recs[1:], "before the binary header"},
		"missing consumer":   {recs[:3], "end after"},
		"swapped providers":  {[][]byte{recs[0], recs[2], recs[1], recs[3]}, "not canonical or not in order"},
		"truncated provider": {with(1, recs[1][:len(recs[1])-1]), "truncated or malformed"},
		"trailing bytes":     {with(3, append(bytes.Clone(recs[3]), 0)), "truncated or malformed"},
		"extra record":       {append(append([][]byte(nil), recs...), recs[3]), "unexpected binary record"},
		"wrong version":      {with(0, []byte("H\x10corral.placement\x09\x02\x01")), "version 9"},
		"over capacity":      {with(3, bytes.Replace(recs[3], []byte("VCPU\x04"), []byte("VCPU\x7e"), 1)), "does not fit"},
		"empty record":       {with(2, nil), "empty record"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeBin(tc.recs)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func FuzzBinaryRecord(f *testing.F) {
	s := New()
	mustCreate(f, s, 1, "", vmInv(8, 8192, 80), "CUSTOM_A")
	recs := binRecords(f, s)
	f.Add(recs[1])
	f.Fuzz(func(t *testing.T, rec []byte) {
		// One provider record after a header announcing one: decoding
		// never panics, and what decodes encodes to a record that decodes
		// to the same store.
		d := NewDecoder()
		if err := d.Add([]byte("H\x10corral.placement\x01\x01\x00")); err != nil {
			t.Fatal(err)
		}
		if d.Add(rec) != nil {
			return
		}
		r, err := d.Finish()
		if err != nil {
			return
		}
		enc := binRecords(t, r)
		r2, err := decodeBin(enc)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		if !Equal(r, r2) || !bytes.Equal(binRecords(t, r2)[1], enc[1]) {
			t.Fatalf("record %q: encoding is not stable", rec)
		}
	})
}
