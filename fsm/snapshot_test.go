package fsm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

func populated(t testing.TB) *Store {
	a := newApplier(t)
	a.ok(&RegisterHost{Meta: at(1), Name: "n2", RaftAddr: "b:1"})
	a.ok(&RegisterHost{Meta: at(2), Name: "n1", RaftAddr: "a:1", Kind: KindHypervisor})
	a.ok(&SetHostStatus{Meta: at(3), Name: "n2", Status: HostDown})
	a.ok(&CreateFlavor{Meta: at(4), Flavor: testFlavor("f2", "large")})
	a.ok(&CreateFlavor{Meta: at(5), Flavor: testFlavor("f1", "small")})
	a.ok(&SetFlavorExtraSpecs{Meta: at(6), ID: "f1", Specs: map[string]string{"z": "1", "a": "2"}})
	return a.s
}

func snapshotBytes(t testing.TB, s *Store) []byte {
	var buf bytes.Buffer
	n, err := s.Snapshot().WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	s := populated(t)
	data := snapshotBytes(t, s)
	if !bytes.HasPrefix(data, []byte(SnapshotMagic+"\x00\x02")) {
		t.Fatalf("header = %q", data[:10])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	assertSameState(t, s, r)
	if r.AppliedIndex() != 6 {
		t.Fatalf("applied index %d, want 6", r.AppliedIndex())
	}
	if again := snapshotBytes(t, r); !bytes.Equal(again, data) {
		t.Fatal("snapshot of restored store differs")
	}
	if _, err := r.FlavorByName("small"); err != nil {
		t.Fatalf("name index not rebuilt: %v", err)
	}
}

// RestoreAt takes the log index the snapshot stands for; a waiter for an
// index up to it is released by the restore itself.
func TestRestoreAtSetsTheLogIndex(t *testing.T) {
	data := snapshotBytes(t, populated(t))
	r := New()
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waited <- r.WaitApplied(ctx, 40)
	}()
	if err := r.RestoreAt(bytes.NewReader(data), 42); err != nil {
		t.Fatal(err)
	}
	if got := r.AppliedIndex(); got != 42 {
		t.Fatalf("applied index %d, want 42", got)
	}
	if err := <-waited; err != nil {
		t.Fatalf("a waiter for index 40 was not released by the restore: %v", err)
	}
	if err := r.RestoreAt(bytes.NewReader(data), 0); err != nil || r.AppliedIndex() != 6 {
		t.Fatalf("RestoreAt(0): applied %d, %v; want the snapshot's own 6", r.AppliedIndex(), err)
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	s := populated(t)
	sn := s.Snapshot()
	want := s.Digest()
	s.Apply(7, mustEncode(t, &SetFlavorExtraSpecs{Meta: at(7), ID: "f1", Specs: map[string]string{"a": "changed"}}))
	s.Apply(8, mustEncode(t, &DeleteFlavor{Meta: at(8), ID: "f2"}))
	var buf bytes.Buffer
	sn.WriteTo(&buf)
	r := New()
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != want || r.AppliedIndex() != 6 || sn.Index() != 6 {
		t.Fatal("snapshot saw later changes")
	}
}

func TestSnapshotCanonical(t *testing.T) {
	build := func(order []string) []byte {
		s := New()
		for i, id := range order {
			s.Apply(uint64(i+1), mustEncode(t, &CreateFlavor{Meta: at(0), Flavor: testFlavor(id, "name-"+id)}))
			s.Apply(uint64(i+100), mustEncode(t, &RegisterHost{Meta: at(0), Name: "h" + id}))
		}
		s.Apply(1000, mustEncode(t, &Noop{}))
		return snapshotBytes(t, s)
	}
	a := build([]string{"a", "b", "c", "d"})
	b := build([]string{"d", "b", "a", "c"})
	if !bytes.Equal(a, b) {
		t.Fatal("equal states gave different snapshots")
	}
}

func TestRestoreReplacesEverything(t *testing.T) {
	target := populated(t)
	src := newApplier(t)
	src.ok(&CreateFlavor{Meta: at(1), Flavor: testFlavor("only", "only")})
	if err := target.Restore(bytes.NewReader(snapshotBytes(t, src.s))); err != nil {
		t.Fatal(err)
	}
	assertSameState(t, src.s, target)
	if len(target.Hosts()) != 0 || len(target.Flavors()) != 1 {
		t.Fatalf("old state survived: %+v %+v", target.Hosts(), target.Flavors())
	}
	if _, err := target.FlavorByName("small"); !errors.Is(err, ErrNotFound) {
		t.Fatal("old name index survived")
	}
	if err := target.Restore(bytes.NewReader(snapshotBytes(t, New()))); err != nil {
		t.Fatal(err)
	}
	if target.AppliedIndex() != 0 || target.Digest() != New().Digest() {
		t.Fatal("restoring an empty snapshot did not empty the store")
	}
}

// stream builds a snapshot by hand: header, then the given raw records, then
// the terminator.
func stream(version uint16, index uint64, recs ...[]byte) []byte {
	b := []byte(SnapshotMagic)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.AppendUvarint(b, index)
	if version > snapshotVersionJSON {
		b = append(b, 0, 0) // no servers, no nodes
	}
	for _, r := range recs {
		b = append(b, r...)
	}
	return append(b, byte(RecordEnd))
}

func record(t RecordType, body string) []byte {
	b := []byte{byte(t)}
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

func TestRestoreRecords(t *testing.T) {
	host := record(RecordHost, `{"name":"n1","status":"up","kind":"ironic"}`)
	flavor := record(RecordFlavor, `{"id":"f1","name":"small","vcpus":1,"ram":1,"rxtx_factor":1}`)
	cases := []struct {
		name    string
		data    []byte
		wantErr string // empty: restore succeeds
	}{
		{"unknown ignorable record", stream(1, 9, host, record(RecordType(IgnoreUnknownFlag)|50, `{"x":1}`), flavor), ""},
		{"unknown record", stream(1, 9, host, record(50, `{}`), flavor), "unknown type 50"},
		{"bad magic", append([]byte("NOTCORRL"), stream(1, 9)[8:]...), "not a corral snapshot"},
		{"newer version", stream(SnapshotVersion+1, 9, host), "newer than this peer supports"},
		{"version zero", stream(0, 9, host), "version 0"},
		{"duplicate host", stream(1, 9, host, host), "appears twice"},
		{"duplicate flavor name", stream(1, 9, flavor, record(RecordFlavor, `{"id":"f2","name":"small"}`)), "used by both"},
		{"bad json", stream(1, 9, record(RecordHost, `{`)), "host"},
		{"oversized record", stream(1, 9, append([]byte{byte(RecordHost)}, binary.AppendUvarint(nil, MaxRecordSize+1)...)), "limit"},
		{"empty", nil, "truncated"},
		{"version 2", stream(2, 9, host, flavor), ""},
		{"version 2 JSON server", stream(2, 9, host, flavor, record(RecordServer, `{"id":"s1"}`)), "server record"},
		{"version 2 JSON placement", stream(2, 9, host, flavor, record(RecordPlacement, `{"format":"corral.placement"}`)), "placement"},
		{"version 2 settings twice", stream(2, 9, host, flavor, record(RecordSettings, `{}`), record(RecordSettings, `{}`)), "twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := populated(t)
			before, index := s.Digest(), s.AppliedIndex()
			err := s.Restore(bytes.NewReader(tc.data))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.AppliedIndex() != 9 || len(s.Hosts()) != 1 || len(s.Flavors()) != 1 {
					t.Fatalf("restored %d hosts, %d flavors at %d", len(s.Hosts()), len(s.Flavors()), s.AppliedIndex())
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.wantErr)
			}
			if s.Digest() != before || s.AppliedIndex() != index {
				t.Fatal("failed restore changed the store")
			}
		})
	}
}

func TestRestoreTruncated(t *testing.T) {
	data := snapshotBytes(t, populated(t))
	s := populated(t)
	before := s.Digest()
	for n := range len(data) {
		if err := s.Restore(bytes.NewReader(data[:n])); err == nil {
			t.Fatalf("restore of %d of %d bytes succeeded", n, len(data))
		}
	}
	if s.Digest() != before || s.AppliedIndex() != 6 {
		t.Fatal("failed restores changed the store")
	}
}
