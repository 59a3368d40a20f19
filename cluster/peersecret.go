package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
)

// peerSecret is the peer token as a MAC key. Without TLS it is what tells
// a peer from a stranger: its raft connections answer a challenge with it
// (raftauth.go), and its gossip metadata carries a MAC made with it
// (sealMeta). The token itself never crosses the network this way.
type peerSecret struct{ key []byte }

func newPeerSecret(token string) *peerSecret {
	if token == "" {
		return nil
	}
	return &peerSecret{key: []byte(token)}
}

// MAC labels: each use of the secret has its own, so that a MAC made for
// one can never pass for another.
const (
	labelMeta       = "corral peer gossip metadata v1"
	labelRaftServer = "corral raft server v1"
	labelRaftClient = "corral raft client v1"
)

// mac is HMAC-SHA256 over label and parts, each part length-prefixed.
func (s *peerSecret) mac(label string, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, s.key)
	writePart(h, []byte(label))
	for _, p := range parts {
		writePart(h, p)
	}
	return h.Sum(nil)
}

func writePart(h hash.Hash, p []byte) {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(p)))
	h.Write(l[:])
	h.Write(p)
}

// A member's gossip metadata is a JSON object; sealed, it ends with one
// more member holding the MAC of the name, the gossip address and the
// object without it, byte for byte (so that fields a newer version adds
// are covered, and an older peer still reads the object).
const (
	sealKey = `,"peer":"`
	sealLen = 43 // base64 (raw URL) of 32 bytes
)

// sealMeta returns body (a JSON object of at least one member) sealed for
// the member name at gossip address addr.
func (s *peerSecret) sealMeta(name, addr string, body []byte) []byte {
	sig := base64.RawURLEncoding.EncodeToString(s.mac(labelMeta, []byte(name), []byte(addr), body))
	out := make([]byte, 0, len(body)+len(sealKey)+sealLen+2)
	out = append(out, body[:len(body)-1]...)
	out = append(out, sealKey...)
	out = append(out, sig...)
	return append(out, '"', '}')
}

// openMeta reports whether raw is metadata sealed with this secret for
// the member name at gossip address addr.
func (s *peerSecret) openMeta(name, addr string, raw []byte) bool {
	tail := len(sealKey) + sealLen + 2
	if len(raw) < tail+2 || raw[len(raw)-2] != '"' || raw[len(raw)-1] != '}' {
		return false
	}
	cut := len(raw) - tail
	if string(raw[cut:cut+len(sealKey)]) != sealKey {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(string(raw[cut+len(sealKey) : len(raw)-2]))
	if err != nil {
		return false
	}
	body := make([]byte, 0, cut+1)
	body = append(append(body, raw[:cut]...), '}')
	return hmac.Equal(sig, s.mac(labelMeta, []byte(name), []byte(addr), body))
}
