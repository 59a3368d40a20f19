package cluster

import (
	"bufio"
	"fmt"
	"io"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// Raft's RPC types on the wire (hashicorp/raft net_transport.go).
const (
	rpcAppendEntries uint8 = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
)

// rpcHead is what the guard decodes of a request: the header every
// request carries (inlined, as raft encodes it) and, for InstallSnapshot,
// the size of the snapshot that follows it on the wire.
type rpcHead struct {
	raft.RPCHeader
	Size int64
}

// rpcGuard is the reading side of an authenticated raft connection, in
// front of raft's NetworkTransport: it decodes each request before raft
// sees it and passes it on, byte for byte, only when its header names the
// authenticated peer as the sender (RPCHeader.ID, the raft server ID,
// which is the peer's name). An empty ID is refused too: raft would then
// skip its own checks of the sender. The header's Addr is not checked:
// corral finds a leader by its ID, never by the address it claims.
//
// The dialing end cannot be as strict: raft gives the stream layer only
// the address it dials, so a dialer checks that it reached a peer, not
// which one.
type rpcGuard struct {
	peer   string
	br     *bufio.Reader
	rec    recorder
	dec    *codec.Decoder
	next   []byte // what raft has not read yet of the current request
	stream int64  // snapshot bytes to pass through once next is read
}

func newRPCGuard(r io.Reader, peer string) *rpcGuard {
	g := &rpcGuard{peer: peer, br: bufio.NewReaderSize(r, 64<<10)}
	g.rec.br = g.br
	g.dec = codec.NewDecoder(&g.rec, &codec.MsgpackHandle{})
	return g
}

// Read implements io.Reader for raft.
func (g *rpcGuard) Read(p []byte) (int, error) {
	if len(g.next) == 0 && g.stream == 0 {
		if err := g.admit(); err != nil {
			return 0, err
		}
	}
	if len(g.next) > 0 {
		n := copy(p, g.next)
		g.next = g.next[n:]
		return n, nil
	}
	if int64(len(p)) > g.stream {
		p = p[:g.stream]
	}
	n, err := g.br.Read(p)
	g.stream -= int64(n)
	return n, err
}

// admit reads the next request and checks its sender.
func (g *rpcGuard) admit() error {
	t, err := g.br.ReadByte()
	if err != nil {
		return err
	}
	switch t {
	case rpcAppendEntries, rpcRequestVote, rpcInstallSnapshot, rpcTimeoutNow, rpcRequestPreVote:
	default:
		return fmt.Errorf("unknown raft RPC type %d from peer %s", t, g.peer)
	}
	g.rec.buf = append(g.rec.buf[:0], t)
	var h rpcHead
	if err := g.dec.Decode(&h); err != nil {
		return fmt.Errorf("decode raft RPC from peer %s: %w", g.peer, err)
	}
	if string(h.ID) != g.peer {
		return fmt.Errorf("%w: the connection is peer %q's, the RPC names %q", ErrRPCSender, g.peer, h.ID)
	}
	if t == rpcInstallSnapshot {
		if h.Size < 0 {
			return fmt.Errorf("decode raft RPC from peer %s: snapshot size %d", g.peer, h.Size)
		}
		g.stream = h.Size
	}
	g.next = g.rec.buf
	return nil
}

// recorder reads through br and keeps every byte the decoder consumed, so
// that raft gets the request exactly as it was sent.
type recorder struct {
	br  *bufio.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func (r *recorder) ReadByte() (byte, error) {
	b, err := r.br.ReadByte()
	if err == nil {
		r.buf = append(r.buf, b)
	}
	return b, err
}

func (r *recorder) UnreadByte() error {
	if err := r.br.UnreadByte(); err != nil {
		return err
	}
	r.buf = r.buf[:len(r.buf)-1]
	return nil
}
