package fsm

import (
	"crypto/sha1"
	"fmt"
)

// vifNamespace is the UUID namespace of derived VIF (port) ids.
var vifNamespace = [16]byte{0x6f, 0x1c, 0x3c, 0x52, 0x4b, 0x1e, 0x4c, 0x3a, 0x9d, 0x2a, 0x8f, 0x6b, 0x2f, 0x0e, 0x7a, 0x11}

// uuid5 returns the name-based (SHA-1, version 5) UUID of name.
func uuid5(ns [16]byte, name string) string {
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(name))
	b := h.Sum(nil)[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// VIFs returns the VIF ids the server's node carries, one per requested
// network: the given port, or a port id derived from the server and the
// network, stable so that a retry or a new owner attaches the same one.
func (s Server) VIFs() []string {
	var out []string
	for _, n := range s.Networks {
		if n.Port != "" {
			out = append(out, n.Port)
			continue
		}
		out = append(out, uuid5(vifNamespace, s.ID+"/"+n.UUID))
	}
	return out
}
