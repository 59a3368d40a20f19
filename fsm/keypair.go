package fsm

import (
	"encoding/json"
	"fmt"
	"time"
)

// KeyPair is a user's public key, as Nova's os-keypairs keeps it. Key
// pairs belong to a user (not a project); a server booted with a key name
// copies the key, so deleting the pair later leaves the server's alone.
// Private keys never enter the log.
type KeyPair struct {
	UserID      string    `json:"user_id"`
	Name        string    `json:"name"`
	Type        string    `json:"type"` // KeyTypeSSH or KeyTypeX509
	PublicKey   string    `json:"public_key"`
	Fingerprint string    `json:"fingerprint"`
	ID          uint64    `json:"id"` // the log index of its creation: Nova's integer id
	CreatedAt   time.Time `json:"created_at"`
}

// Key pair types.
const (
	KeyTypeSSH  = "ssh"
	KeyTypeX509 = "x509"
)

// Key pair limits.
const (
	MaxKeyPairNameLen   = 255
	MaxPublicKeyLen     = 16 << 10
	maxKeyPairUserIDLen = 255
)

// CreateKeyPair records a user's key pair. The API checks the public key
// and computes its fingerprint before proposing (Apply does no parsing
// beyond the limits).
type CreateKeyPair struct {
	Meta
	KeyPair KeyPair `json:"keypair"`
	// ProjectID is the caller's project (empty: DefaultProject), whose
	// key_pairs quota bounds the user's key pairs.
	ProjectID string `json:"project_id,omitempty"`
}

// Type implements Command.
func (*CreateKeyPair) Type() CommandType { return CmdCreateKeyPair }

// DeleteKeyPair removes a user's key pair.
type DeleteKeyPair struct {
	Meta
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

// Type implements Command.
func (*DeleteKeyPair) Type() CommandType { return CmdDeleteKeyPair }

func init() {
	register[CreateKeyPair](CmdCreateKeyPair, "CreateKeyPair", applyCreateKeyPair)
	register[DeleteKeyPair](CmdDeleteKeyPair, "DeleteKeyPair", applyDeleteKeyPair)
	registerRecord(RecordKeyPair, recordSpec{name: "keypair", write: writeKeyPairRecords, load: loadKeyPairRecord})
}

func keyPairKey(user, name string) string { return user + "\x00" + name }

// ValidateKeyPairName checks a key pair name as Nova (before 2.92) does:
// 1 to 255 letters, digits, spaces, '_', '-', '.' and '@', not only spaces.
func ValidateKeyPairName(name string) error {
	if name == "" || len(name) > MaxKeyPairNameLen {
		return fmt.Errorf("%w: Keypair data is invalid: Keypair name must be string and between 1 and %d characters long", ErrInvalid, MaxKeyPairNameLen)
	}
	blank := true
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == ' ' || c == '_' || c == '-' || c == '.' || c == '@'
		if !ok {
			return fmt.Errorf("%w: Keypair data is invalid: Keypair name contains unsafe characters", ErrInvalid)
		}
		if c != ' ' {
			blank = false
		}
	}
	if blank {
		return fmt.Errorf("%w: Keypair data is invalid: Keypair name must not be only spaces", ErrInvalid)
	}
	return nil
}

func applyCreateKeyPair(st *state, c *CreateKeyPair) (any, error) {
	k := c.KeyPair
	if err := ValidateKeyPairName(k.Name); err != nil {
		return nil, err
	}
	switch {
	case k.UserID == "" || len(k.UserID) > maxKeyPairUserIDLen:
		return nil, fmt.Errorf("%w: a key pair belongs to a user: user id must be 1 to %d characters", ErrInvalid, maxKeyPairUserIDLen)
	case k.Type != KeyTypeSSH && k.Type != KeyTypeX509:
		return nil, fmt.Errorf("%w: key pair type %q is unknown: use %q or %q", ErrInvalid, k.Type, KeyTypeSSH, KeyTypeX509)
	case k.PublicKey == "" || len(k.PublicKey) > MaxPublicKeyLen || k.Fingerprint == "":
		return nil, fmt.Errorf("%w: Keypair data is invalid: a public key (at most %d bytes) and its fingerprint are required", ErrInvalid, MaxPublicKeyLen)
	}
	// The quota first, as Nova checks it before it stores the pair.
	if err := st.checkKeyPairQuota(orAdmin(c.ProjectID), k.UserID); err != nil { // quota_check.go
		return nil, err
	}
	key := keyPairKey(k.UserID, k.Name)
	if _, dup := st.keypairs[key]; dup {
		return nil, fmt.Errorf("%w: Key pair '%s' already exists.", ErrConflict, k.Name)
	}
	k.ID = st.index
	k.CreatedAt = c.At.UTC()
	st.keypairs[key] = k
	st.usage.countKeyPair(k.UserID, 1)
	return k, nil
}

func applyDeleteKeyPair(st *state, c *DeleteKeyPair) (any, error) {
	key := keyPairKey(c.UserID, c.Name)
	if _, ok := st.keypairs[key]; !ok {
		return nil, errKeyPairNotFound(c.UserID, c.Name)
	}
	delete(st.keypairs, key)
	st.usage.countKeyPair(c.UserID, -1)
	return nil, nil
}

func errKeyPairNotFound(user, name string) error {
	return fmt.Errorf("%w: Keypair %s not found for user %s", ErrNotFound, name, user)
}

// KeyPairs returns a user's key pairs by name.
func (s *Store) KeyPairs(user string) []KeyPair {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []KeyPair
	for _, key := range sortedKeys(s.st.keypairs) {
		if k := s.st.keypairs[key]; k.UserID == user {
			out = append(out, k)
		}
	}
	return out
}

// KeyPair returns one of a user's key pairs.
func (s *Store) KeyPair(user, name string) (KeyPair, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.st.keypairs[keyPairKey(user, name)]
	if !ok {
		return KeyPair{}, errKeyPairNotFound(user, name)
	}
	return k, nil
}

func writeKeyPairRecords(st *state, emit func(v any) error) error {
	for _, key := range sortedKeys(st.keypairs) {
		if err := emit(st.keypairs[key]); err != nil {
			return err
		}
	}
	return nil
}

func loadKeyPairRecord(st *state, body []byte) error {
	var k KeyPair
	if err := json.Unmarshal(body, &k); err != nil {
		return err
	}
	if k.UserID == "" || k.Name == "" {
		return fmt.Errorf("key pair record has no user or name")
	}
	key := keyPairKey(k.UserID, k.Name)
	if _, dup := st.keypairs[key]; dup {
		return fmt.Errorf("key pair %q of user %q appears twice", k.Name, k.UserID)
	}
	st.keypairs[key] = k
	st.usage.countKeyPair(k.UserID, 1)
	return nil
}

// MaxUserDataLen bounds a server's base64 user_data, as Nova does.
const MaxUserDataLen = 65535

// bootKey checks a new server's user data and returns the public key of
// the key pair it names ("" for none): the pair must be the user's.
func bootKey(st *state, c *CreateServer) (string, error) {
	if len(c.UserData) > MaxUserDataLen {
		return "", fmt.Errorf("%w: user_data is %d bytes long: at most %d (base64) are allowed", ErrInvalid, len(c.UserData), MaxUserDataLen)
	}
	if c.KeyName == "" {
		return "", nil
	}
	if c.Bounded {
		if err := CheckText("key_name", c.KeyName, MaxKeyPairNameLen, false); err != nil {
			return "", err
		}
	}
	k, ok := st.keypairs[keyPairKey(orAdmin(c.UserID), c.KeyName)]
	if !ok {
		return "", fmt.Errorf("%w: Invalid key_name provided: the user has no key pair %q (list them with openstack keypair list)", ErrInvalid, c.KeyName)
	}
	return k.PublicKey, nil
}
