package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// handshakeTimeout bounds a raft connection's handshake (TLS or the peer
// token's).
const handshakeTimeout = 5 * time.Second

// peerStream is raft's StreamLayer between peers only: every connection
// starts with a handshake that proves the other end is a peer and tells
// which one: mutual TLS with a peer's certificate (tlsutil), or, without
// TLS, the peer token's challenge (raftauth.go). The accepting end then
// reads each RPC through an rpcGuard, so that a peer speaks raft only in
// its own name.
type peerStream struct {
	net.Listener
	// serve authenticates an accepted connection; it returns the
	// connection to read and write and the peer at the other end.
	serve func(ctx context.Context, c net.Conn) (net.Conn, string, error)
	// dial authenticates a connection this peer opened to addr.
	dial   func(ctx context.Context, c net.Conn, addr raft.ServerAddress) (net.Conn, error)
	tls    bool // the handshake is TLS's (else the peer token's)
	log    *slog.Logger
	refuse func(reason string) // counts a refused connection
}

// Refusal reasons, as counted.
const (
	refusedTLS    = "tls"        // no peer certificate from the cluster's CA
	refusedToken  = "peer_token" // the peer token's challenge failed
	refusedSender = "sender"     // an RPC in another peer's name
)

// Accept returns the next connection; its handshake happens on first
// use, in raft's goroutine for that connection, so a slow or hostile
// client cannot stall the accept loop.
func (s *peerStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: c, s: s}, nil
}

// Dial opens a connection to a peer and completes the handshake.
func (s *peerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	raw, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	c, err := s.dial(ctx, raw, addr)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	return c, nil
}

// serverConn authenticates the other end before the first read or write,
// with a deadline, then reads through an rpcGuard bound to that peer.
type serverConn struct {
	net.Conn
	s    *peerStream
	once sync.Once
	err  error
	conn net.Conn // after the handshake: the connection to use
	g    *rpcGuard
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		conn, peer, err := c.s.serve(ctx, c.Conn)
		if err != nil {
			c.err = err
			_ = c.Conn.Close()
			if errors.Is(err, io.EOF) {
				// Connected and closed without a word: a liveness probe.
				c.s.log.Debug("raft connection closed before its handshake", "remote", c.RemoteAddr().String())
				return
			}
			reason := refusedToken
			if c.s.tls {
				reason = refusedTLS
			}
			c.s.refuse(reason)
			c.s.log.Warn("refused a raft connection: the other end did not prove it is a peer", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		c.conn, c.g = conn, newRPCGuard(conn, peer)
	})
	return c.err
}

func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	n, err := c.g.Read(b)
	if errors.Is(err, ErrRPCSender) {
		c.s.refuse(refusedSender)
		c.s.log.Warn("refused a raft connection: a peer sent an RPC in another's name", "remote", c.RemoteAddr().String(), "err", err)
		_ = c.conn.Close()
	}
	return n, err
}

func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.conn.Write(b)
}

func (c *serverConn) Close() error {
	if c.conn != nil {
		return c.conn.Close()
	}
	return c.Conn.Close()
}

// tlsServe completes the server side of mutual TLS: the client's
// certificate must name a peer (tlsutil.Config.PeerServer).
func tlsServe(cfg *tls.Config) func(ctx context.Context, c net.Conn) (net.Conn, string, error) {
	return func(ctx context.Context, c net.Conn) (net.Conn, string, error) {
		tc := tls.Server(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, "", err
		}
		st := tc.ConnectionState()
		peer, err := tlsutil.PeerOf(&st)
		if err != nil {
			return nil, "", err
		}
		return tc, peer, nil
	}
}

// tlsDial completes the client side of mutual TLS with the config for host.
func tlsDial(cfg func(host string) *tls.Config) func(ctx context.Context, c net.Conn, addr raft.ServerAddress) (net.Conn, error) {
	return func(ctx context.Context, c net.Conn, addr raft.ServerAddress) (net.Conn, error) {
		host, _, err := net.SplitHostPort(string(addr))
		if err != nil {
			return nil, fmt.Errorf("raft address %s: %w", addr, err)
		}
		tc := tls.Client(c, cfg(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake with raft peer %s: %w (does it hold a peer certificate from this cluster's CA?)", addr, err)
		}
		return tc, nil
	}
}

// newPeerTransport listens on addr for raft between peers: over mutual
// TLS when cfg.TLS is set, else behind the peer token's challenge.
func newPeerTransport(cfg *Config, addr string, n *metrics, hl hclog.Logger) (*raft.NetworkTransport, error) {
	st := &peerStream{log: cfg.Logger.With("component", "raft"), refuse: func(reason string) {
		if reason == refusedTLS {
			n.tlsRefused.WithLabelValues("raft").Inc()
			return
		}
		n.raftRefused.WithLabelValues(reason).Inc()
	}}
	switch {
	case cfg.TLS != nil:
		st.tls = true
		st.serve = tlsServe(cfg.TLS.PeerServer())
		st.dial = tlsDial(func(host string) *tls.Config { return cfg.TLS.PeerClient(host, true) })
	case cfg.PeerToken != "":
		sec := newPeerSecret(cfg.PeerToken)
		st.serve = sec.serveRaft
		st.dial = func(ctx context.Context, c net.Conn, addr raft.ServerAddress) (net.Conn, error) {
			return sec.dialRaft(ctx, c, cfg.Name, addr)
		}
	default:
		return nil, errors.New("raft between peers needs TLS or a peer token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	st.Listener = ln
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: st, MaxPool: 3, Timeout: 5 * time.Second, Logger: hl,
	}), nil
}
