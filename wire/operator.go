package wire

import "time"

// KeyringRequest is the body of POST (install), PUT (use) and DELETE
// (remove) on KeyringPath.
type KeyringRequest struct {
	Key string `json:"key"` // base64 of 32 bytes
}

// KeyringResponse lists each member's keyring after the operation, and
// the members on which it failed (the answer is then 207).
type KeyringResponse struct {
	Peers  []KeyringStatus   `json:"peers"`
	Errors map[string]string `json:"errors,omitempty"`
}

// KeyringStatus is one member's gossip keyring.
type KeyringStatus struct {
	Peer    string   `json:"peer"`
	Primary string   `json:"primary"`
	Keys    []string `json:"keys"`
}

// RemovePeerRequest is the body of POST RemovePeerPath.
type RemovePeerRequest struct {
	Name string `json:"name"`
}

// SnapshotHeader describes a snapshot file; POST SnapshotPath answers the
// header of the restored one.
type SnapshotHeader struct {
	Index   uint64    `json:"index"`
	Term    uint64    `json:"term"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	TakenAt time.Time `json:"taken_at"`
	TakenBy string    `json:"taken_by"`
	// Digest is the state's digest, equal on every peer that holds the
	// same state.
	Digest string `json:"digest"`
}
