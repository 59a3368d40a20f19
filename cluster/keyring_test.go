package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, GossipKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func TestParseGossipKey(t *testing.T) {
	if _, err := ParseGossipKey(newKey(t)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString([]byte("short")), ""} {
		if _, err := ParseGossipKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("%q: %v, want ErrBadKey", bad, err)
		}
	}
}

func TestKeyringRotatesAndPersists(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := newKey(t), newKey(t)
	cfg := &Config{DataDir: dir, GossipKey: k1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	kr, err := openKeyring(cfg)
	if err != nil || kr == nil {
		t.Fatalf("open: %v %v", kr, err)
	}
	n := &Node{cfg: *cfg, keyring: kr, log: cfg.Logger}
	st, err := n.KeyringLocal(KeyringUse, k2)
	if err == nil {
		t.Fatalf("made a key primary that is not installed: %+v", st)
	}
	if _, err := n.KeyringLocal(KeyringInstall, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := n.KeyringLocal(KeyringUse, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := n.KeyringLocal(KeyringRemove, k2); err == nil {
		t.Fatal("removed the primary key")
	}
	st, err = n.KeyringLocal(KeyringRemove, k1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Primary != k2 || len(st.Keys) != 1 {
		t.Fatalf("after rotation: %+v", st)
	}
	// A restart keeps the rotated keyring, not [gossip] encrypt.
	again, err := openKeyring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n2 := &Node{cfg: *cfg, keyring: again, log: cfg.Logger}
	st2, err := n2.KeyringLocal(KeyringList, "")
	if err != nil || st2.Primary != k2 || len(st2.Keys) != 1 {
		t.Fatalf("after restart: %+v %v", st2, err)
	}
	// A corrupt keyring file is refused, naming it.
	p := filepath.Join(dir, keyringFile)
	if err := os.WriteFile(p, []byte(`["not-a-key"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openKeyring(cfg); err == nil || !strings.Contains(err.Error(), p) || !errors.Is(err, ErrBadKey) {
		t.Fatalf("corrupt keyring: %v", err)
	}
	// No key and no file: encryption off.
	off := &Config{DataDir: t.TempDir(), Logger: cfg.Logger}
	if kr, err := openKeyring(off); kr != nil || err != nil {
		t.Fatalf("without key: %v %v", kr, err)
	}
	n3 := &Node{cfg: *off}
	if _, err := n3.KeyringLocal(KeyringList, ""); !errors.Is(err, ErrEncryptionOff) {
		t.Fatalf("list without encryption: %v", err)
	}
}

func TestValidateNamesBadGossipKey(t *testing.T) {
	c := Config{Name: "a", InmemStore: true, BindAddr: "127.0.0.1", RaftPort: 1, APIAddr: "127.0.0.1:2", GossipKey: "abc"}
	c.setDefaults()
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "[gossip] encrypt") || !errors.Is(err, ErrBadKey) {
		t.Fatalf("validate: %v", err)
	}
}
