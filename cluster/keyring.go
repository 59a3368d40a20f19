package cluster

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/memberlist"
)

// GossipKeySize is the size of a gossip encryption key (AES-256).
const GossipKeySize = 32

// keyringFile is where a peer keeps its gossip keyring, primary key
// first, so that a rotated keyring survives a restart ([gossip] encrypt
// only seeds it).
const keyringFile = "gossip.keyring"

// ParseGossipKey decodes a base64 gossip key and checks its length.
func ParseGossipKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %v", ErrBadKey, err)
	}
	if len(k) != GossipKeySize {
		return nil, fmt.Errorf("%w: it decodes to %d bytes", ErrBadKey, len(k))
	}
	return k, nil
}

// KeyringStatus is one peer's gossip keyring.
type KeyringStatus struct {
	Peer    string   `json:"peer"`
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"`
}

// keyring is this peer's memberlist keyring and the file that keeps it.
type keyring struct {
	mu   sync.Mutex
	ring *memberlist.Keyring
	path string // "" when the raft stores are in memory
}

// openKeyring loads the persisted keyring, or seeds one from encrypt; it
// returns nil when encryption is off (no file and no key).
func openKeyring(cfg *Config) (*keyring, error) {
	kr := &keyring{}
	if !cfg.InmemStore && cfg.DataDir != "" {
		kr.path = filepath.Join(cfg.DataDir, keyringFile)
	}
	var keys [][]byte
	if kr.path != "" {
		raw, err := os.ReadFile(kr.path)
		switch {
		case err == nil:
			var enc []string
			if err := json.Unmarshal(raw, &enc); err != nil || len(enc) == 0 {
				return nil, fmt.Errorf("gossip keyring %s is not a JSON list of keys: remove it to start again from [gossip] encrypt", kr.path)
			}
			for _, e := range enc {
				k, err := ParseGossipKey(e)
				if err != nil {
					return nil, fmt.Errorf("gossip keyring %s: %w", kr.path, err)
				}
				keys = append(keys, k)
			}
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("read gossip keyring %s: %w", kr.path, err)
		}
	}
	if len(keys) == 0 && cfg.GossipKey != "" {
		k, err := ParseGossipKey(cfg.GossipKey)
		if err != nil {
			return nil, fmt.Errorf("[gossip] encrypt: %w", err)
		}
		keys = [][]byte{k}
	} else if len(keys) > 0 && cfg.GossipKey != "" {
		if k, err := ParseGossipKey(cfg.GossipKey); err == nil && !containsKey(keys, k) {
			cfg.Logger.Warn("[gossip] encrypt is not in the persisted keyring and is ignored: the keyring was rotated with `corral keyring`", "keyring", kr.path)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	ring, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return nil, fmt.Errorf("gossip keyring: %w", err)
	}
	kr.ring = ring
	return kr, kr.save()
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// save writes the keyring file atomically (caller holds mu or owns kr).
func (kr *keyring) save() error {
	if kr.path == "" {
		return nil
	}
	primary := kr.ring.GetPrimaryKey()
	enc := []string{base64.StdEncoding.EncodeToString(primary)}
	for _, k := range kr.ring.GetKeys() {
		if !bytes.Equal(k, primary) {
			enc = append(enc, base64.StdEncoding.EncodeToString(k))
		}
	}
	raw, _ := json.Marshal(enc)
	tmp := kr.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write gossip keyring %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, kr.path); err != nil {
		return fmt.Errorf("write gossip keyring %s: %w", kr.path, err)
	}
	return nil
}

// Keyring operations.
const (
	KeyringList    = "list"
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)

// KeyringLocal applies one keyring operation to this peer only and
// returns its keyring afterwards. The API's keyring endpoint calls it on
// every member (see the operator API).
func (n *Node) KeyringLocal(op, key string) (KeyringStatus, error) {
	kr := n.keyring
	if kr == nil {
		return KeyringStatus{Peer: n.cfg.Name}, ErrEncryptionOff
	}
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if op != KeyringList {
		k, err := ParseGossipKey(key)
		if err != nil {
			return KeyringStatus{}, err
		}
		switch op {
		case KeyringInstall:
			err = kr.ring.AddKey(k)
		case KeyringUse:
			if !containsKey(kr.ring.GetKeys(), k) {
				err = errors.New("the key is not installed on this peer: install it on every peer first (`corral keyring install`)")
			} else {
				err = kr.ring.UseKey(k)
			}
		case KeyringRemove:
			if bytes.Equal(kr.ring.GetPrimaryKey(), k) {
				err = errors.New("the key is this peer's primary key: make another key primary first (`corral keyring use`)")
			} else {
				err = kr.ring.RemoveKey(k)
			}
		default:
			return KeyringStatus{}, fmt.Errorf("unknown keyring operation %q: use list, install, use or remove", op)
		}
		if err != nil {
			return KeyringStatus{}, fmt.Errorf("keyring %s on %s: %w", op, n.cfg.Name, err)
		}
		if err := kr.save(); err != nil {
			return KeyringStatus{}, err
		}
		n.log.Info("gossip keyring changed", "op", op)
	}
	st := KeyringStatus{Peer: n.cfg.Name, Primary: base64.StdEncoding.EncodeToString(kr.ring.GetPrimaryKey())}
	for _, k := range kr.ring.GetKeys() {
		st.Keys = append(st.Keys, base64.StdEncoding.EncodeToString(k))
	}
	return st, nil
}
