package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// handshakeTimeout bounds a raft connection's TLS handshake.
const handshakeTimeout = 5 * time.Second

// tlsStream is raft's StreamLayer over mutual TLS: a peer must present a
// certificate signed by the cluster's CA to be heard, and this peer
// verifies the certificate of every peer it dials.
type tlsStream struct {
	net.Listener
	server *tls.Config
	client func(host string) *tls.Config
	log    *slog.Logger
	refuse func() // counts a refused handshake
}

// Accept returns the next connection; its TLS handshake happens on first
// use, in raft's goroutine for that connection, so a slow or hostile
// client cannot stall the accept loop.
func (s *tlsStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: tls.Server(c, s.server), s: s}, nil
}

// Dial opens a connection to a peer and completes the handshake.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(addr))
	if err != nil {
		return nil, fmt.Errorf("raft address %s: %w", addr, err)
	}
	raw, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, s.client(host))
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("TLS handshake with raft peer %s: %w (is its certificate signed by this cluster's CA?)", addr, err)
	}
	return c, nil
}

// serverConn completes the server handshake before the first read or
// write, with a deadline, and logs a refused peer.
type serverConn struct {
	*tls.Conn
	s    *tlsStream
	once sync.Once
	err  error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		if err := c.HandshakeContext(ctx); err != nil {
			c.err = err
			c.s.refuse()
			c.s.log.Warn("refused a raft connection: TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
			_ = c.Conn.Close()
		}
	})
	return c.err
}

func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// newTLSTransport listens on addr for raft over mutual TLS.
func newTLSTransport(cfg *Config, addr string, n *metrics, hl hclog.Logger) (*raft.NetworkTransport, error) {
	if cfg.TLS == nil {
		return nil, errors.New("no TLS configuration")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	st := &tlsStream{
		Listener: ln,
		server:   cfg.TLS.PeerServer(),
		client:   func(host string) *tls.Config { return cfg.TLS.PeerClient(host, true) },
		log:      cfg.Logger.With("component", "raft"),
		refuse:   func() { n.tlsRefused.WithLabelValues("raft").Inc() },
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: st, MaxPool: 3, Timeout: 5 * time.Second, Logger: hl,
	}), nil
}
