package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func testKey(user, name string) KeyPair {
	return KeyPair{UserID: user, Name: name, Type: KeyTypeSSH, PublicKey: "ssh-ed25519 AAAAC3Nza " + name,
		Fingerprint: "aa:bb:" + name}
}

func TestKeyPairsPerUser(t *testing.T) {
	a := newApplier(t)
	a.ok(&CreateKeyPair{Meta: at(1), KeyPair: testKey("u1", "laptop")})
	a.ok(&CreateKeyPair{Meta: at(2), KeyPair: testKey("u2", "laptop")})
	a.ok(&CreateKeyPair{Meta: at(3), KeyPair: testKey("u1", "ci")})
	got := a.s.KeyPairs("u1")
	if len(got) != 2 || got[0].Name != "ci" || got[1].Name != "laptop" || got[1].ID != 1 || !got[1].CreatedAt.Equal(t0.Add(1e9)) {
		t.Fatalf("u1's pairs: %+v", got)
	}
	if k, err := a.s.KeyPair("u2", "laptop"); err != nil || k.UserID != "u2" {
		t.Fatalf("u2's laptop: %+v, %v", k, err)
	}
	before := a.s.Digest()
	bad := func(mod func(*KeyPair)) *CreateKeyPair {
		k := testKey("u1", "new")
		mod(&k)
		return &CreateKeyPair{KeyPair: k}
	}
	for _, tc := range []struct {
		c    Command
		want error
	}{
		{&CreateKeyPair{KeyPair: testKey("u1", "laptop")}, ErrConflict},
		{bad(func(k *KeyPair) { k.Name = "a/b" }), ErrInvalid},
		{bad(func(k *KeyPair) { k.Name = "   " }), ErrInvalid},
		{bad(func(k *KeyPair) { k.Name = strings.Repeat("k", 256) }), ErrInvalid},
		{bad(func(k *KeyPair) { k.UserID = "" }), ErrInvalid},
		{bad(func(k *KeyPair) { k.Type = "gpg" }), ErrInvalid},
		{bad(func(k *KeyPair) { k.PublicKey = "" }), ErrInvalid},
		{&DeleteKeyPair{UserID: "u2", Name: "ci"}, ErrNotFound},
	} {
		if r := a.apply(tc.c); !errors.Is(r.Err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.c, r.Err, tc.want)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected key pair command changed the state")
	}
	a.ok(&DeleteKeyPair{Meta: at(4), UserID: "u1", Name: "laptop"})
	if _, err := a.s.KeyPair("u1", "laptop"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted pair: %v", err)
	}
	if k, err := a.s.KeyPair("u2", "laptop"); err != nil || k.UserID != "u2" {
		t.Fatalf("another user's pair of the same name went too: %v", err)
	}

	var buf bytes.Buffer
	if _, err := a.s.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.s.Digest() || !reflect.DeepEqual(r.KeyPairs("u1"), a.s.KeyPairs("u1")) {
		t.Fatal("key pairs differ after a snapshot round trip")
	}
}

func TestBootWithKeyAndUserData(t *testing.T) {
	a := newApplier(t)
	a.ok(&CreateFlavor{Meta: at(0), Flavor: testFlavor("f1", "small")})
	a.ok(&CreateKeyPair{Meta: at(1), KeyPair: testKey("u1", "laptop")})
	before := a.s.Digest()
	for _, c := range []*CreateServer{
		{ID: "s1", Name: "a", FlavorID: "f1", ImageRef: "i", UserID: "u1", KeyName: "desktop"},
		{ID: "s1", Name: "a", FlavorID: "f1", ImageRef: "i", UserID: "u2", KeyName: "laptop"},
		{ID: "s1", Name: "a", FlavorID: "f1", ImageRef: "i", UserData: strings.Repeat("A", MaxUserDataLen+1)},
	} {
		if r := a.apply(c); !errors.Is(r.Err, ErrInvalid) {
			t.Errorf("boot %+v: %v, want ErrInvalid", c.KeyName, r.Err)
		}
	}
	if a.s.Digest() != before {
		t.Fatal("a rejected boot changed the state")
	}
	a.ok(&CreateServer{Meta: at(2), ID: "s1", Name: "a", FlavorID: "f1", ImageRef: "i", UserID: "u1",
		KeyName: "laptop", UserData: "I2Nsb3VkLWNvbmZpZw=="})
	a.ok(&DeleteKeyPair{Meta: at(3), UserID: "u1", Name: "laptop"})
	s, err := a.s.Server("s1")
	if err != nil || s.KeyName != "laptop" || s.KeyData != testKey("u1", "laptop").PublicKey || s.UserData != "I2Nsb3VkLWNvbmZpZw==" {
		t.Fatalf("server keeps its copy of the key: %+v, %v", s, err)
	}
}
func ptr[T any](v T) *T { return &v }
