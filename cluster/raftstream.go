package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// handshakeTimeout bounds a raft connection's handshake (TLS or the peer
// token's).
const handshakeTimeout = 5 * time.Second

// peerStream is raft's StreamLayer between peers only, and the raft
// port's demultiplexer. Every connection starts with a handshake that
// proves the other end is a peer and tells which one: mutual TLS with a
// peer's certificate (tlsutil), or, without TLS, the peer token's
// challenge (raftauth.go). The first byte after it selects the protocol:
//
//   - raft: the byte is raft's own, the type of the connection's first RPC
//     (0-4), so that raft connections are what they were before the port
//     carried anything else, and peers of older versions keep talking
//     raft with this one. raft reads them through an rpcGuard, so that a
//     peer speaks raft only in its own name.
//   - connRPC: forwarding's RPC (cluster/forward), which the listener
//     acknowledges with rpcAck before the session starts, so that the
//     dialer knows it is served before it sends a request: a peer of an
//     older version (its guard refuses the byte) or one that does not
//     serve the RPC closes the connection instead.
type peerStream struct {
	ln net.Listener
	// serve authenticates an accepted connection; it returns the
	// connection to read and write and the peer at the other end.
	serve func(ctx context.Context, c net.Conn) (net.Conn, string, error)
	// dial authenticates a connection this peer opened to addr.
	dial   func(ctx context.Context, c net.Conn, addr raft.ServerAddress) (net.Conn, error)
	tls    bool // the handshake is TLS's (else the peer token's)
	log    *slog.Logger
	refuse func(reason string) // counts a refused connection

	rpc       atomic.Pointer[rpcHandler] // nil: the RPC is not served
	conns     chan net.Conn              // raft's, authenticated
	done      chan struct{}
	closeOnce sync.Once
}

// rpcHandler serves forwarding's RPC on an authenticated connection of
// peer, until it ends.
type rpcHandler struct{ serve func(c net.Conn, peer string) }

// connRPC is the first byte of a connection for forwarding's RPC, far from
// raft's RPC types (0-4); rpcAck is the listener's answer when it serves it.
const (
	connRPC byte = 0xf0
	rpcAck  byte = 0xf1
)

// Refusal reasons, as counted.
const (
	refusedTLS    = "tls"        // no peer certificate from the cluster's CA
	refusedToken  = "peer_token" // the peer token's challenge failed
	refusedSender = "sender"     // an RPC in another peer's name
)

// serveRPC has the port serve forwarding's RPC with f from now on.
func (s *peerStream) serveRPC(f func(c net.Conn, peer string)) { s.rpc.Store(&rpcHandler{serve: f}) }

// Accept returns the next raft connection, authenticated.
func (s *peerStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close stops listening. Connections already handed out are their
// users' to close.
func (s *peerStream) Close() error {
	err := net.ErrClosed
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.ln.Close()
	})
	return err
}

// Addr is the port's address.
func (s *peerStream) Addr() net.Addr { return s.ln.Addr() }

// acceptLoop accepts connections and sorts each out in a goroutine of its
// own, so that a slow or hostile client cannot stall the others.
func (s *peerStream) acceptLoop() {
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				_ = s.Close()
				return
			}
			// Out of file descriptors and the like: wait and retry.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("raft port: accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-s.done:
				return
			}
			continue
		}
		delay = 0
		go s.handle(c)
	}
}

// handle authenticates c, reads its first byte within the handshake's
// deadline, and hands it to raft or to forwarding's RPC.
func (s *peerStream) handle(raw net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	conn, peer, err := s.serve(ctx, raw)
	if err != nil {
		_ = raw.Close()
		if errors.Is(err, io.EOF) {
			// Connected and closed without a word: a liveness probe.
			s.log.Debug("raft port: connection closed before its handshake", "remote", raw.RemoteAddr().String())
			return
		}
		reason := refusedToken
		if s.tls {
			reason = refusedTLS
		}
		s.refuse(reason)
		s.log.Warn("refused a raft connection: the other end did not prove it is a peer", "remote", raw.RemoteAddr().String(), "err", err)
		return
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	lift := deadline(ctx, conn)
	first, err := br.Peek(1)
	if err != nil {
		_ = conn.Close()
		s.log.Debug("raft port: a peer's connection closed before its first byte", "peer", peer, "err", err)
		return
	}
	if first[0] != connRPC {
		lift()
		select {
		case s.conns <- &guardedConn{Conn: conn, g: newRPCGuard(br, peer), s: s}:
		case <-s.done:
			_ = conn.Close()
		}
		return
	}
	h := s.rpc.Load()
	if h == nil {
		_ = conn.Close()
		s.log.Warn("refused a connection for forwarding's RPC: this peer does not serve it", "peer", peer)
		return
	}
	_, _ = br.Discard(1)
	if _, err := conn.Write([]byte{rpcAck}); err != nil {
		_ = conn.Close()
		return
	}
	lift()
	h.serve(&bufferedConn{Conn: conn, r: br}, peer)
}

// guardedConn is the server end of an authenticated raft connection:
// reads go through the guard, which refuses an RPC in another's name.
type guardedConn struct {
	net.Conn
	g *rpcGuard
	s *peerStream
}

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.g.Read(p)
	if errors.Is(err, ErrRPCSender) {
		c.s.refuse(refusedSender)
		c.s.log.Warn("refused a raft connection: a peer sent an RPC in another's name", "remote", c.RemoteAddr().String(), "err", err)
		_ = c.Conn.Close()
	}
	return n, err
}

// bufferedConn reads what the port buffered before the connection's
// protocol took it.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Dial opens a raft connection to a peer and completes the handshake.
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

// dialRPC opens a connection for forwarding's RPC to the peer whose raft
// port is addr (a forward.Dialer): the handshake of raft's connections,
// then connRPC, and the peer's acknowledgement.
func (s *peerStream) dialRPC(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c, err := s.dial(ctx, raw, raft.ServerAddress(addr))
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	lift := deadline(ctx, c)
	var ack [1]byte
	_, err = c.Write([]byte{connRPC})
	if err == nil {
		_, err = io.ReadFull(c, ack[:])
	}
	if err == nil && ack[0] != rpcAck {
		err = fmt.Errorf("answered %#x", ack[0])
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("peer at %s does not serve forwarding's RPC (%v): an older version, or it is stopping", addr, err)
	}
	lift()
	return c, nil
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
// TLS when cfg.TLS is set, else behind the peer token's challenge. The
// returned stream is the port's, where forwarding's RPC is served too.
func newPeerTransport(cfg *Config, addr string, n *metrics, hl hclog.Logger) (*raft.NetworkTransport, *peerStream, error) {
	st := &peerStream{log: cfg.Logger.With("component", "raft"), refuse: func(reason string) {
		if reason == refusedTLS {
			n.tlsRefused.WithLabelValues("raft").Inc()
			return
		}
		n.raftRefused.WithLabelValues(reason).Inc()
	}, conns: make(chan net.Conn), done: make(chan struct{})}
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
		return nil, nil, errors.New("raft between peers needs TLS or a peer token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	st.ln = ln
	go st.acceptLoop()
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: st, MaxPool: 3, Timeout: 5 * time.Second, Logger: hl,
	}), st, nil
}
