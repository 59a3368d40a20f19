package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"
)

// fillAll sets every field of the value v points to, recursively, to a
// random non-zero value: maps and slices get one to three elements,
// pointers a filled value. A field of a kind it does not know fails the
// test, so that a new field type is noticed here too.
func fillAll(t testing.TB, r *rand.Rand, v reflect.Value, path string) {
	t.Helper()
	str := func() string {
		pieces := []string{"a", "Z", "0", "-", "_", ":", " ", "\"", "\\", "é", "\x01", "ü€"}
		s := ""
		for range 1 + r.IntN(12) {
			s += pieces[r.IntN(len(pieces))]
		}
		return s
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(str())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := r.Int64N(1<<40) + 1
		if r.IntN(2) == 0 {
			n = -n
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(r.Uint64()>>r.IntN(64) | 1)
	case reflect.Float64:
		v.SetFloat(r.NormFloat64()*1e3 + 0.5)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9)-1e9, r.Int64N(1e9)+1).UTC()))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s is unexported: the snapshot encoding cannot see it", path, f.Name)
			}
			fillAll(t, r, v.Field(i), path+"."+f.Name)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(t, r, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		n := 1 + r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillAll(t, r, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 1 + r.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			fillAll(t, r, k, path+".key")
			e := reflect.New(v.Type().Elem()).Elem()
			fillAll(t, r, e, fmt.Sprintf("%s[%d]", path, i))
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		t.Fatalf("%s has kind %s, which the test cannot fill: teach it, and the snapshot encoding", path, v.Kind())
	}
}

// zeroFields lists the fields of v left at their zero value, recursively.
func zeroFields(v reflect.Value, path string) []string {
	if v.IsZero() {
		return []string{path}
	}
	var out []string
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return nil
		}
		for i := range v.NumField() {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.Pointer:
		out = zeroFields(v.Elem(), path)
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// Every field of Server and Node (and of the Flavor a server embeds)
// survives the binary records: the values are filled by reflection, so a
// field added later without its encoding fails here.
func TestBinaryRecordsCarryEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		var s Server
		fillAll(t, r, reflect.ValueOf(&s).Elem(), "Server")
		if z := zeroFields(reflect.ValueOf(s), "Server"); len(z) > 0 {
			t.Fatalf("fields left zero: %v", z)
		}
		got, err := decodeServer(string(appendServer(nil, &s, SnapshotVersion)), SnapshotVersion)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("server %d does not survive a round trip:\n got %+v\nwant %+v", i, got, s)
		}
		var n Node
		fillAll(t, r, reflect.ValueOf(&n).Elem(), "Node")
		if z := zeroFields(reflect.ValueOf(n), "Node"); len(z) > 0 {
			t.Fatalf("fields left zero: %v", z)
		}
		gotN, err := decodeNode(string(appendNode(nil, &n)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotN, n) {
			t.Fatalf("node %d does not survive a round trip:\n got %+v\nwant %+v", i, gotN, n)
		}
	}
	// Zero values too, and they read back as the JSON records read them.
	for _, v := range []any{Server{}, Node{}} {
		var got any
		var err error
		switch v := v.(type) {
		case Server:
			got, err = decodeServer(string(appendServer(nil, &v, SnapshotVersion)), SnapshotVersion)
		case Node:
			got, err = decodeNode(string(appendNode(nil, &v)))
		}
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("zero %T: got %+v, %v", v, got, err)
		}
	}
}

// A server or node decoded from its binary record equals the one decoded
// from its JSON record (format version 1), so either restore gives the
// same state.
func TestBinaryRecordsMatchJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		var s Server
		fillAll(t, r, reflect.ValueOf(&s).Elem(), "Server")
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON Server
		if err := json.Unmarshal(js, &fromJSON); err != nil {
			t.Fatal(err)
		}
		fromBin, err := decodeServer(string(appendServer(nil, &fromJSON, SnapshotVersion)), SnapshotVersion)
		if err != nil || !reflect.DeepEqual(fromBin, fromJSON) {
			t.Fatalf("JSON and binary records differ:\n%+v\n%+v (%v)", fromBin, fromJSON, err)
		}
	}
}

func TestBinaryRecordsRejectMalformed(t *testing.T) {
	var s Server
	fillAll(t, rand.New(rand.NewPCG(5, 6)), reflect.ValueOf(&s).Elem(), "Server")
	body := appendServer(nil, &s, SnapshotVersion)
	for n := range len(body) {
		if _, err := decodeServer(string(body[:n]), SnapshotVersion); err == nil {
			t.Fatalf("a server record cut at %d of %d bytes decoded", n, len(body))
		}
	}
	if _, err := decodeServer(string(append(body, 0)), SnapshotVersion); err == nil {
		t.Fatal("a server record with a trailing byte decoded")
	}
	var n Node
	fillAll(t, rand.New(rand.NewPCG(7, 8)), reflect.ValueOf(&n).Elem(), "Node")
	nb := appendNode(nil, &n)
	for i := range len(nb) {
		if _, err := decodeNode(string(nb[:i])); err == nil {
			t.Fatalf("a node record cut at %d of %d bytes decoded", i, len(nb))
		}
	}
}

func FuzzServerRecord(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 3 {
		var s Server
		fillAll(f, r, reflect.ValueOf(&s).Elem(), "Server")
		f.Add(appendServer(nil, &s, SnapshotVersion))
	}
	f.Add(appendServer(nil, &Server{ID: "s1"}, SnapshotVersion))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := decodeServer(string(body), SnapshotVersion)
		if err != nil {
			return
		}
		// What decodes encodes stably, and back to an equal server.
		enc := appendServer(nil, &s, SnapshotVersion)
		s2, err := decodeServer(string(enc), SnapshotVersion)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		if !bytes.Equal(appendServer(nil, &s2, SnapshotVersion), enc) {
			t.Fatalf("encoding of %q is not stable", body)
		}
	})
}

func FuzzNodeRecord(f *testing.F) {
	var n Node
	fillAll(f, rand.New(rand.NewPCG(11, 12)), reflect.ValueOf(&n).Elem(), "Node")
	f.Add(appendNode(nil, &n))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := decodeNode(string(body))
		if err != nil {
			return
		}
		enc := appendNode(nil, &n)
		n2, err := decodeNode(string(enc))
		if err != nil || !bytes.Equal(appendNode(nil, &n2), enc) {
			t.Fatalf("encoding of %q is not stable (%v)", body, err)
		}
	})
}

// writeVersion1 writes s as format version 1 did: the record types of
// version 1, every body JSON, by the JSON record specs this peer still
// reads.
func writeVersion1(t testing.TB, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	w.WriteString(SnapshotMagic)
	binary.Write(w, binary.BigEndian, uint16(snapshotVersionJSON))
	w.Write(binary.AppendUvarint(nil, s.AppliedIndex()))
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, rt := range recordOrder {
		if rt == RecordSettings {
			continue // not in version 1
		}
		err := records[rt].write(s.st, func(v any) error {
			body, ok := v.(rawRecord)
			if !ok {
				var err error
				if body, err = json.Marshal(v); err != nil {
					return err
				}
			}
			w.WriteByte(byte(rt))
			w.Write(binary.AppendUvarint(nil, uint64(len(body))))
			_, err := w.Write(body)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	w.WriteByte(byte(RecordEnd))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A snapshot of format version 1 (JSON records) still restores, to the
// same state as the current format, with its indexes rebuilt.
func TestRestoreVersion1(t *testing.T) {
	a := hostCountFixture(t)
	runRandomCommands(t, a, rand.New(rand.NewPCG(21, 22)), 300)
	off := false // version 1 did not carry the legacy switch: it restores off
	a.ok(&SyncNodes{Meta: at(1000), LegacyInventory: &off})
	old := writeVersion1(t, a.s)
	if !bytes.HasPrefix(old, []byte(SnapshotMagic+"\x00\x01")) {
		t.Fatalf("header = %q", old[:10])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	assertSameState(t, a.s, r)
	if !reflect.DeepEqual(r.Servers(), a.s.Servers()) || !reflect.DeepEqual(r.Nodes(), a.s.Nodes()) {
		t.Fatal("servers or nodes restored from version 1 differ")
	}
	if r.AppliedIndex() != a.s.AppliedIndex() {
		t.Fatalf("applied index %d, want %d", r.AppliedIndex(), a.s.AppliedIndex())
	}
	if !bytes.Equal(snapshotBytes(t, r), snapshotBytes(t, a.s)) {
		t.Fatal("a store restored from version 1 snapshots differently")
	}
	checkIndexes(t, r)
}

// The legacy inventory switch is part of the snapshot (format version 2
// on): a restored peer reconciles node inventories as the others do.
func TestSnapshotCarriesLegacySwitch(t *testing.T) {
	a := hostCountFixture(t)
	on := true
	a.ok(&SyncNodes{Meta: at(1), LegacyInventory: &on})
	r := New()
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, a.s))); err != nil {
		t.Fatal(err)
	}
	a.ok(&SyncNodes{Meta: at(2), Upserts: []Node{{UUID: fixtureNode(1), ResourceClass: "baremetal-gold",
		ProvisionState: "available", PowerState: "power off", Properties: map[string]string{"cpus": "8"}}}})
	b := &applier{tb: t, s: r, index: r.AppliedIndex()}
	b.ok(&SyncNodes{Meta: at(2), Upserts: []Node{{UUID: fixtureNode(1), ResourceClass: "baremetal-gold",
		ProvisionState: "available", PowerState: "power off", Properties: map[string]string{"cpus": "8"}}}})
	if a.s.Digest() != r.Digest() {
		t.Fatal("a restored store lost the legacy inventory switch")
	}
	legacy := New()
	legacy.Apply(1, mustEncode(t, &SyncNodes{LegacyInventory: &on}))
	if legacy.Digest() == New().Digest() {
		t.Fatal("the digest does not cover the legacy inventory switch")
	}
}

// Every cut of a snapshot holding servers, nodes and placement records
// fails to restore, and leaves the store as it was.
func TestRestoreTruncatedBinary(t *testing.T) {
	a := hostCountFixture(t)
	runRandomCommands(t, a, rand.New(rand.NewPCG(31, 32)), 200)
	data := snapshotBytes(t, a.s)
	s := populated(t)
	before := s.Digest()
	for n := 0; n < len(data); n += 1 + n%53 {
		if err := s.Restore(bytes.NewReader(data[:n])); err == nil {
			t.Fatalf("restore of %d of %d bytes succeeded", n, len(data))
		}
	}
	if s.Digest() != before || s.AppliedIndex() != 6 {
		t.Fatal("failed restores changed the store")
	}
	if err := s.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	assertSameState(t, a.s, s)
}

// testdata/snapshot-v1.snap was written by the last peer that wrote format
// version 1, after applying the entries of testdata/snapshot-v1.log (each
// a uvarint index, a uvarint length and the entry): hosts of both kinds, a
// hypervisor's inventory, nodes, public and private flavors, a key pair,
// servers through creates, tasks, reservations, moves, adoptions, purges
// and actions. This peer restores it to the state it builds from that log.
func TestRestoreVersion1Golden(t *testing.T) {
	snap, err := os.ReadFile("testdata/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	logData, err := os.ReadFile("testdata/snapshot-v1.log")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(snap, []byte(SnapshotMagic+"\x00\x01")) {
		t.Fatalf("testdata/snapshot-v1.snap is not a version 1 snapshot: %q", snap[:10])
	}
	replayed := New()
	for rest := logData; len(rest) > 0; {
		index, n := binary.Uvarint(rest)
		size, m := binary.Uvarint(rest[n:])
		if n <= 0 || m <= 0 || uint64(len(rest)-n-m) < size {
			t.Fatal("testdata/snapshot-v1.log is malformed")
		}
		replayed.Apply(index, rest[n+m:n+m+int(size)])
		rest = rest[n+m+int(size):]
	}
	restored := New()
	if err := restored.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	// Every record read back as it was written: the version 1 encoding
	// of the restored state is the snapshot itself.
	if !bytes.Equal(writeVersion1(t, restored), snap) {
		t.Fatal("the version 1 records of the restored store differ from the snapshot's")
	}
	// And it is the state the log builds.
	assertSameState(t, replayed, restored)
	if !reflect.DeepEqual(restored.Servers(), replayed.Servers()) || !reflect.DeepEqual(restored.Nodes(), replayed.Nodes()) {
		t.Fatal("servers or nodes restored from the version 1 snapshot differ from the replayed log")
	}
	if len(restored.Servers()) == 0 || len(restored.Nodes()) == 0 {
		t.Fatal("the golden snapshot holds no servers or no nodes")
	}
	checkIndexes(t, restored)
	if !bytes.Equal(snapshotBytes(t, restored), snapshotBytes(t, replayed)) {
		t.Fatal("the store restored from version 1 snapshots differently from the replayed one")
	}
}
