package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// snapshotFormat writes a snapshot of s and returns its format version,
// and checks that a restore of it gives back the same state.
func snapshotFormat(t *testing.T, s *Store) uint16 {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	v := binary.BigEndian.Uint16(buf.Bytes()[len(SnapshotMagic):])
	r := New()
	if err := r.Restore(&buf); err != nil {
		t.Fatalf("restore of a format %d snapshot: %v", v, err)
	}
	if r.Digest() != s.Digest() || !reflect.DeepEqual(r.Servers(), s.Servers()) {
		t.Fatalf("a format %d snapshot does not restore the state it was taken of", v)
	}
	return v
}

// refuses applies each command and wants it refused with want, the state
// unchanged.
func (a *applier) refuses(want error, cmds ...Command) {
	a.tb.Helper()
	before := a.s.Digest()
	for _, c := range cmds {
		if r := a.apply(c); !errors.Is(r.Err, want) {
			a.tb.Errorf("%T %+v: %v, want %v", c, c, r.Err, want)
		}
	}
	if a.s.Digest() != before {
		a.tb.Fatal("refused commands changed the state")
	}
}

func TestUpdateServerFields(t *testing.T) {
	a, s := activeServer(t)
	if v := snapshotFormat(t, a.s); v != 2 {
		t.Fatalf("a state without the fields of Nova's API is written in format %d, want 2", v)
	}
	a.ok(&UpdateServerFields{Meta: at(3), ID: s.ID, Name: ptr("db-2"), Description: &StringChange{Value: "primary"},
		AccessIPv4: ptr("192.0.2.10"), AccessIPv6: ptr("2001:db8::10")})
	got, _ := a.s.Server(s.ID)
	if got.Name != "db-2" || got.Description == nil || *got.Description != "primary" || got.AccessIPv4 != "192.0.2.10" ||
		got.AccessIPv6 != "2001:db8::10" || !got.UpdatedAt.Equal(at(3).At) {
		t.Fatalf("after update: %+v", got)
	}
	if v := snapshotFormat(t, a.s); v != 4 {
		t.Fatalf("a server with a description is written in format %d, want 4", v)
	}
	a.refuses(ErrInvalid,
		&UpdateServerFields{ID: s.ID, Name: ptr("")},
		&UpdateServerFields{ID: s.ID, Description: &StringChange{Value: "tab\there"}},
		&UpdateServerFields{ID: s.ID, Description: &StringChange{Value: strings.Repeat("é", MaxDescriptionLen+1)}},
		&UpdateServerFields{ID: s.ID, AccessIPv4: ptr("2001:db8::1")},
		&UpdateServerFields{ID: s.ID, AccessIPv4: ptr("192.0.2.300")},
		&UpdateServerFields{ID: s.ID, AccessIPv6: ptr("192.0.2.1")},
		&UpdateServerFields{ID: s.ID, AccessIPv6: ptr("fe80::1%eth0")},
		&UpdateServerFields{ID: s.ID, AccessIPv4: ptr(strings.Repeat("1", 100))})
	a.refuses(ErrNotFound, &UpdateServerFields{ID: "nope", Name: ptr("x")})

	// Nova's null clears the description; "" clears an address; once no
	// server holds a field of format 4, snapshots are in format 2 again.
	a.ok(&UpdateServerFields{Meta: at(4), ID: s.ID, Description: &StringChange{Null: true}, AccessIPv4: ptr(""), AccessIPv6: ptr("")})
	got, _ = a.s.Server(s.ID)
	if got.Description != nil || got.AccessIPv4 != "" || got.AccessIPv6 != "" || got.Name != "db-2" {
		t.Fatalf("after clearing: %+v", got)
	}
	if v := snapshotFormat(t, a.s); v != 2 {
		t.Fatalf("a state without the fields is written in format %d, want 2", v)
	}
	a.ok(&UpdateServerFields{Meta: at(5), ID: s.ID, Description: &StringChange{}})
	if got, _ := a.s.Server(s.ID); got.Description == nil || *got.Description != "" {
		t.Fatalf("an empty description is not Nova's null: %+v", got.Description)
	}
}

func TestServerMetadata(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&SetServerMetadata{Meta: at(3), ID: s.ID, Op: MetadataReplace, Metadata: map[string]string{"a": "1", "b": "2"}})
	a.ok(&SetServerMetadata{Meta: at(4), ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"b": "3", "c": "4"}})
	got, _ := a.s.Server(s.ID)
	if !reflect.DeepEqual(got.Metadata, map[string]string{"a": "1", "b": "3", "c": "4"}) {
		t.Fatalf("after merge: %v", got.Metadata)
	}
	a.ok(&SetServerMetadata{Meta: at(5), ID: s.ID, Op: MetadataDelete, Key: "a"})
	if got, _ := a.s.Server(s.ID); !reflect.DeepEqual(got.Metadata, map[string]string{"b": "3", "c": "4"}) {
		t.Fatalf("after delete: %v", got.Metadata)
	}
	full := map[string]string{}
	for i := range DefaultMetadataItems {
		full[strings.Repeat("k", i+1)] = "v"
	}
	a.ok(&SetServerMetadata{Meta: at(6), ID: s.ID, Op: MetadataReplace, Metadata: full})

	a.refuses(ErrQuotaExceeded,
		&SetServerMetadata{ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"one-more": "v"}})
	a.refuses(ErrInvalid,
		&SetServerMetadata{ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"bad/key": "v"}},
		&SetServerMetadata{ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"": "v"}},
		&SetServerMetadata{ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"k": strings.Repeat("v", MaxMetadataValueLen+1)}},
		&SetServerMetadata{ID: s.ID, Op: "append", Metadata: map[string]string{"k": "v"}},
		&SetServerMetadata{ID: s.ID, Op: MetadataDelete, Key: "k", Metadata: map[string]string{"k": "v"}})
	a.refuses(ErrNotFound,
		&SetServerMetadata{ID: s.ID, Op: MetadataDelete, Key: "absent"},
		&SetServerMetadata{ID: "nope", Op: MetadataMerge, Metadata: map[string]string{"k": "v"}})

	// Locked: only an admin's edit; a task in progress: none.
	a.ok(&UpdateServer{Meta: at(7), ID: s.ID, Locked: ptr(true)})
	a.refuses(ErrConflict, &SetServerMetadata{ID: s.ID, Op: MetadataReplace})
	a.ok(&SetServerMetadata{Meta: at(8), ID: s.ID, Op: MetadataReplace, Admin: true})
	if got, _ := a.s.Server(s.ID); got.Metadata != nil {
		t.Fatalf("after an empty replace: %v", got.Metadata)
	}
	a.ok(&UpdateServer{Meta: at(9), ID: s.ID, Locked: ptr(false)})
	a.ok(&RequestServerAction{Meta: at(10), ID: s.ID, Kind: ActionStop})
	a.refuses(ErrConflict, &SetServerMetadata{ID: s.ID, Op: MetadataMerge, Metadata: map[string]string{"k": "v"}})
	// Metadata is in every format: it needs no new one.
	if v := snapshotFormat(t, a.s); v != 2 {
		t.Fatalf("format %d, want 2", v)
	}
}

func TestServerTags(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&SetServerTags{Meta: at(3), ID: s.ID, Op: TagsReplace, Tags: []string{"red", "blue", "red"}})
	if got, _ := a.s.Server(s.ID); !reflect.DeepEqual(got.Tags, []string{"blue", "red"}) {
		t.Fatalf("tags are kept sorted and unique: %v", got.Tags)
	}
	if v := snapshotFormat(t, a.s); v != 4 {
		t.Fatalf("a server with tags is written in format %d, want 4", v)
	}
	a.ok(&SetServerTags{Meta: at(4), ID: s.ID, Op: TagAdd, Tag: "green"})
	before := a.s.Digest()
	a.ok(&SetServerTags{Meta: at(5), ID: s.ID, Op: TagAdd, Tag: "green"})
	if a.s.Digest() != before {
		t.Fatal("adding a tag the server has changed the state")
	}
	a.ok(&SetServerTags{Meta: at(6), ID: s.ID, Op: TagDelete, Tag: "blue"})
	if got, _ := a.s.Server(s.ID); !reflect.DeepEqual(got.Tags, []string{"green", "red"}) {
		t.Fatalf("after add and delete: %v", got.Tags)
	}
	many := make([]string, MaxTags)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	a.refuses(ErrInvalid,
		&SetServerTags{ID: s.ID, Op: TagAdd, Tag: "a/b"},
		&SetServerTags{ID: s.ID, Op: TagAdd, Tag: "a,b"},
		&SetServerTags{ID: s.ID, Op: TagAdd, Tag: ""},
		&SetServerTags{ID: s.ID, Op: TagAdd, Tag: strings.Repeat("t", MaxTagLen+1)},
		&SetServerTags{ID: s.ID, Op: TagsReplace, Tags: append(many, "one-more")},
		&SetServerTags{ID: s.ID, Op: "toggle", Tag: "x"})
	a.refuses(ErrNotFound,
		&SetServerTags{ID: s.ID, Op: TagDelete, Tag: "absent"},
		&SetServerTags{ID: "nope", Op: TagAdd, Tag: "x"})
	a.ok(&SetServerTags{Meta: at(7), ID: s.ID, Op: TagsReplace, Tags: many})
	a.refuses(ErrInvalid, &SetServerTags{ID: s.ID, Op: TagAdd, Tag: "one-more"})
	// Stopped: tags still change; in ERROR: they do not.
	a.ok(&RequestServerAction{Meta: at(8), ID: s.ID, Kind: ActionStop})
	a.ok(&FinishServerAction{Meta: at(9), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionStop})
	a.ok(&SetServerTags{Meta: at(10), ID: s.ID, Op: TagsReplace})
	if got, _ := a.s.Server(s.ID); got.Tags != nil {
		t.Fatalf("after removing all: %v", got.Tags)
	}
	a.ok(&RequestServerAction{Meta: at(11), ID: s.ID, Kind: ActionRebootHard})
	a.ok(&FinishServerAction{Meta: at(12), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebootHard, Fault: &Fault{Code: 500, Message: "x"}})
	a.refuses(ErrConflict, &SetServerTags{ID: s.ID, Op: TagAdd, Tag: "x"})
}

func TestRebuildServer(t *testing.T) {
	a, s := activeServer(t)
	a.ok(&CreateKeyPair{Meta: at(2), KeyPair: KeyPair{UserID: "u1", Name: "laptop", Type: KeyTypeSSH, PublicKey: "ssh-ed25519 AAAA u1", Fingerprint: "aa:bb"}})
	a.ok(&RebuildServer{Meta: Meta{At: at(3).At, RequestID: "req-7"}, ID: s.ID, ImageRef: "img-9", Name: ptr("db-9"),
		SetMetadata: true, Metadata: map[string]string{"role": "db"}, Description: &StringChange{Value: "rebuilt"},
		AccessIPv4: ptr("192.0.2.9"), KeyName: &StringChange{Value: "laptop"}, UserID: "u1",
		UserData: &StringChange{Value: "I2Nsb3VkLWNvbmZpZw=="}, PreserveEphemeral: true})
	got, _ := a.s.Server(s.ID)
	switch {
	case got.TaskState != TaskRebuilding || got.Action == nil || got.Action.ImageRef != "img-9" || !got.Action.PreserveEphemeral ||
		got.Action.RequestID != "req-7":
		t.Fatalf("rebuild action: %+v", got.Action)
	case got.Name != "db-9" || got.Metadata["role"] != "db" || len(got.Metadata) != 1 || *got.Description != "rebuilt" ||
		got.AccessIPv4 != "192.0.2.9" || got.KeyName != "laptop" || got.KeyData != "ssh-ed25519 AAAA u1" || got.UserData == "":
		t.Fatalf("the fields change with the request, as Nova changes them: %+v", got)
	case got.ImageRef == "img-9":
		t.Fatal("the image changes when the rebuild is done")
	}
	if v := snapshotFormat(t, a.s); v != 4 {
		t.Fatalf("a rebuild that preserves the ephemeral partition is written in format %d, want 4", v)
	}
	a.refuses(ErrConflict, &RebuildServer{ID: s.ID, ImageRef: "img-10"}) // a task in progress
	a.ok(&FinishServerAction{Meta: at(4), ID: s.ID, Host: s.Host, Epoch: s.Epoch, Kind: ActionRebuild})

	a.refuses(ErrInvalid,
		&RebuildServer{ID: s.ID},
		&RebuildServer{ID: s.ID, ImageRef: strings.Repeat("i", MaxImageRefLen+1)},
		&RebuildServer{ID: s.ID, ImageRef: "img", KeyName: &StringChange{Value: "absent"}, UserID: "u1"},
		&RebuildServer{ID: s.ID, ImageRef: "img", KeyName: &StringChange{Value: "laptop"}, UserID: "u2"},
		&RebuildServer{ID: s.ID, ImageRef: "img", UserData: &StringChange{Value: strings.Repeat("A", MaxUserDataLen+1)}},
		&RebuildServer{ID: s.ID, ImageRef: "img", SetMetadata: true, Metadata: map[string]string{"bad/key": "v"}},
		&RebuildServer{ID: s.ID, ImageRef: "img", Metadata: map[string]string{"k": "v"}},
		&RebuildServer{ID: s.ID, ImageRef: "img", Name: ptr("")},
		&RebuildServer{ID: s.ID, ImageRef: "img", AccessIPv6: ptr("::zz")})
	a.refuses(ErrNotFound, &RebuildServer{ID: "nope", ImageRef: "img"})

	// Null removes the key pair and the user data; the metadata and the
	// rest stay when not given.
	a.ok(&RebuildServer{Meta: at(5), ID: s.ID, ImageRef: "img-10", KeyName: &StringChange{Null: true}, UserData: &StringChange{Null: true}})
	got, _ = a.s.Server(s.ID)
	if got.KeyName != "" || got.KeyData != "" || got.UserData != "" || got.Name != "db-9" || got.Metadata["role"] != "db" || got.Action.PreserveEphemeral {
		t.Fatalf("after a second rebuild: %+v", got)
	}
}
