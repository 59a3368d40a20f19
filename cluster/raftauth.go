package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Without TLS, a raft connection starts with a challenge that both ends
// answer with the peer token, so that only peers speak raft and each
// knows which peer the other is:
//
//	dialer → listener: raftHello, a 32-byte nonce Nd, the dialer's name (1-byte length first)
//	listener → dialer: a 32-byte nonce Nl, MAC(server label, Nd, Nl, name)
//	dialer → listener: MAC(client label, Nl, Nd, name)
//
// Neither end sends the token, and neither MAC can be replayed on another
// connection or passed off for the other end's. The connection itself
// stays plain text: on a network others can reach, turn TLS on.
var raftHello = []byte("corral-raft\x01")

const nonceLen = 32

// serveRaft runs the listener's side of the challenge on c.
func (s *peerSecret) serveRaft(ctx context.Context, c net.Conn) (net.Conn, string, error) {
	defer deadline(ctx, c)()
	hello := make([]byte, len(raftHello)+nonceLen+1)
	if _, err := io.ReadFull(c, hello); err != nil {
		return nil, "", err // io.EOF: closed before a word
	}
	if string(hello[:len(raftHello)]) != string(raftHello) {
		return nil, "", fmt.Errorf("%w: it did not start the peer token's challenge (a peer of an older version, or not a peer)", ErrPeerToken)
	}
	nd := hello[len(raftHello) : len(raftHello)+nonceLen]
	name := make([]byte, hello[len(hello)-1])
	if _, err := io.ReadFull(c, name); err != nil {
		return nil, "", hungUp(err)
	}
	if !nameRE.Match(name) {
		return nil, "", fmt.Errorf("%w: it gave no valid peer name", ErrPeerToken)
	}
	nl := make([]byte, nonceLen)
	if _, err := rand.Read(nl); err != nil {
		return nil, "", err
	}
	if _, err := c.Write(append(nl, s.mac(labelRaftServer, nd, nl, name)...)); err != nil {
		return nil, "", hungUp(err)
	}
	proof := make([]byte, 32)
	if _, err := io.ReadFull(c, proof); err != nil {
		return nil, "", hungUp(err)
	}
	if !hmac.Equal(proof, s.mac(labelRaftClient, nl, nd, name)) {
		return nil, "", fmt.Errorf("%w: peer %q answered the challenge wrong", ErrPeerToken, name)
	}
	return c, string(name), nil
}

// hungUp is the error of a dialer that went away during the challenge (a
// dialer without the token, which found the listener's answer wrong): not
// io.EOF, which stands for a connection closed before a word (a probe).
func hungUp(err error) error {
	return fmt.Errorf("%w: the other end hung up during the challenge (%v)", ErrPeerToken, err)
}

// dialRaft runs the dialer's side of the challenge on c, as peer name.
func (s *peerSecret) dialRaft(ctx context.Context, c net.Conn, name string, addr raft.ServerAddress) (net.Conn, error) {
	defer deadline(ctx, c)()
	nd := make([]byte, nonceLen)
	if _, err := rand.Read(nd); err != nil {
		return nil, err
	}
	hello := append(append(append([]byte{}, raftHello...), nd...), byte(len(name)))
	if _, err := c.Write(append(hello, name...)); err != nil {
		return nil, fmt.Errorf("raft peer %s: %w", addr, err)
	}
	answer := make([]byte, nonceLen+32)
	if _, err := io.ReadFull(c, answer); err != nil {
		return nil, fmt.Errorf("raft peer %s did not answer the peer token's challenge: %w (does it run this version, with the same [auth] peer_token?)", addr, err)
	}
	nl := answer[:nonceLen]
	if !hmac.Equal(answer[nonceLen:], s.mac(labelRaftServer, nd, nl, []byte(name))) {
		return nil, fmt.Errorf("raft peer %s: %w: check [auth] peer_token on every peer", addr, ErrPeerToken)
	}
	if _, err := c.Write(s.mac(labelRaftClient, nl, nd, []byte(name))); err != nil {
		return nil, fmt.Errorf("raft peer %s: %w", addr, err)
	}
	return c, nil
}

// deadline bounds c's I/O by ctx's deadline; the returned func lifts it.
func deadline(ctx context.Context, c net.Conn) func() {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	return func() { _ = c.SetDeadline(time.Time{}) }
}
