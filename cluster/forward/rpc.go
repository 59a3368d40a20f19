package forward

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"

	"github.com/corral-dev/corral/fsm"
)

// RPCVersion is the version of forwarding's binary RPC. A leader
// advertises the version it serves; a follower uses the RPC only with a
// leader that advertises the version it speaks, and forwards over HTTP
// otherwise.
const RPCVersion = "1"

// Operations of the RPC. Like the error kinds, their names are part of
// the protocol between peers of different versions: never change one,
// only add.
const (
	opApply     = "apply"
	opReadIndex = "read_index"
)

// rpcRequest is one request on a stream.
type rpcRequest struct {
	Op      string `codec:"op"`
	Command []byte `codec:"cmd,omitempty"`    // opApply: the encoded fsm command
	Verify  bool   `codec:"verify,omitempty"` // opReadIndex: confirmed by a quorum
	// Timeout is how long the follower waits for the answer (ns): the
	// leader gives up then too. 0: maxServeTime.
	Timeout int64 `codec:"timeout,omitempty"`
}

// rpcResponse answers one request, in the order of the requests.
type rpcResponse struct {
	Index uint64     `codec:"index"`
	Error *WireError `codec:"error,omitempty"`
}

// msgpack is the codec of requests and answers. A handle is safe for
// concurrent use.
var msgpack = &codec.MsgpackHandle{}

// maxServeTime bounds the leader's work on a request without a timeout.
const maxServeTime = time.Minute

// muxConfig is the yamux configuration of both ends: its logs go to log
// at warning level, and a session whose peer stops answering its
// keep-alives is closed.
func muxConfig(log *slog.Logger) *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = nil
	c.Logger = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	c.KeepAliveInterval = 10 * time.Second
	c.ConnectionWriteTimeout = 5 * time.Second
	return c
}

// ServerOptions tune a Server.
type ServerOptions struct {
	Logger *slog.Logger
	// Served, when set, is told of every request served: its operation
	// and the error it was answered with (nil: an index).
	Served func(op string, err error)
}

// Server is the leader's end of the RPC. The cluster hands it the
// connections a peer opened for the RPC, authenticated (the raft port's
// peer handshake) and past the byte that selects the RPC; each is a yamux
// session whose streams each carry requests answered in order, so that a
// follower keeps as many in flight as it has streams open.
type Server struct {
	l      Leader
	log    *slog.Logger
	served func(op string, err error)
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[*yamux.Session]struct{}
	wg       sync.WaitGroup
}

// NewServer returns the RPC's server for l.
func NewServer(l Leader, o ServerOptions) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{l: l, log: o.Logger, served: o.Served, ctx: ctx, cancel: cancel, sessions: map[*yamux.Session]struct{}{}}
}

// ServeConn serves the RPC on c, a connection of the peer named peer,
// until the session ends or the server closes.
func (s *Server) ServeConn(c net.Conn, peer string) {
	sess, err := yamux.Server(&frameConn{Conn: c}, muxConfig(s.log))
	if err != nil { // only a bad configuration fails
		s.log.Error("forwarding RPC session", "peer", peer, "err", err)
		_ = c.Close()
		return
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		_ = sess.Close()
		return
	}
	s.sessions[sess] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		_ = sess.Close()
		s.wg.Done()
	}()
	s.log.Debug("forwarding RPC session opened", "peer", peer, "remote", c.RemoteAddr().String())
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			s.log.Debug("forwarding RPC session ended", "peer", peer, "err", err)
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			_ = st.Close()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveStream(st, peer)
		}()
	}
}

// serveStream answers the requests of one stream in order until it ends.
func (s *Server) serveStream(st *yamux.Stream, peer string) {
	defer st.Close()
	dec := codec.NewDecoder(bufio.NewReaderSize(st, 4<<10), msgpack)
	bw := bufio.NewWriterSize(st, 512)
	enc := codec.NewEncoder(bw, msgpack)
	for {
		var req rpcRequest
		if err := dec.Decode(&req); err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				s.log.Debug("forwarding RPC stream ended", "peer", peer, "err", err)
			}
			return
		}
		resp := s.handle(&req)
		if err := enc.Encode(&resp); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

func (s *Server) handle(req *rpcRequest) rpcResponse {
	timeout := time.Duration(req.Timeout)
	if timeout <= 0 || timeout > maxServeTime {
		timeout = maxServeTime
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var idx uint64
	var err error
	switch req.Op {
	case opApply:
		if len(req.Command) > maxCommand {
			err = fmt.Errorf("%w: the forwarded command is larger than %d bytes", fsm.ErrInvalid, maxCommand)
			break
		}
		idx, err = s.l.ApplyForwarded(ctx, req.Command)
	case opReadIndex:
		idx, err = s.l.ReadIndex(ctx, req.Verify)
	default:
		err = fmt.Errorf("%w: no forwarding operation %q", fsm.ErrNotFound, req.Op)
	}
	if s.served != nil {
		s.served(req.Op, err)
	}
	if err != nil {
		we, _ := toWire(err)
		return rpcResponse{Error: we}
	}
	return rpcResponse{Index: idx}
}

// Close ends every session and waits for the requests in flight, which
// are cancelled.
func (s *Server) Close() {
	s.mu.Lock()
	s.cancel()
	for sess := range s.sessions {
		_ = sess.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// frameConn writes each yamux data frame in one write. yamux writes a
// frame's 12-byte header and its body apart (from one goroutine, the
// session's sender), which costs a system call and, with TCP_NODELAY, a
// packet each: a request or an answer would take two of both.
type frameConn struct {
	net.Conn
	buf []byte // a data frame's header waiting for its body, then the frame
}

// yamux's frame header: version, type (0: data), flags, stream, length.
const (
	frameHeaderLen = 12
	frameData      = 0
	maxCoalesced   = 64 << 10
)

func (c *frameConn) Write(p []byte) (int, error) {
	if len(c.buf) == 0 {
		if len(p) == frameHeaderLen && p[1] == frameData && binary.BigEndian.Uint32(p[8:12]) > 0 {
			c.buf = append(c.buf, p...) // its body comes next
			return len(p), nil
		}
		return c.Conn.Write(p)
	}
	hdr := len(c.buf)
	defer func() { c.buf = c.buf[:0] }()
	if len(p) > maxCoalesced {
		if _, err := c.Conn.Write(c.buf); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	n, err := c.Conn.Write(c.buf)
	return max(n-hdr, 0), err
}
