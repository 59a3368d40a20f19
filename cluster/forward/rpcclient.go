package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"
)

// Dialer opens a connection for the RPC to the peer at addr (its raft
// address): it authenticates both ends as peers, selects the RPC, and
// returns once the peer accepted it. Nothing of a request has been sent
// when it fails.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// Session events, as RPCClientOptions.Session is told of them.
const (
	SessionOpened = "opened" // a session was opened (the first, or after one was lost)
	SessionFailed = "failed" // a session could not be opened
	SessionLost   = "lost"   // an open session ended (its connection broke, the peer stopped)
)

// RPCClientOptions tune an RPCClient.
type RPCClientOptions struct {
	Logger *slog.Logger
	// Session, when set, is told of every session event.
	Session func(event string)
}

// dialTimeout bounds the opening of a session.
const dialTimeout = 5 * time.Second

// maxIdleStreams bounds the streams a session keeps open between calls.
const maxIdleStreams = 256

// RPCClient is the follower's end of the RPC: one long-lived yamux session
// per leader it forwards to, opened on first use and again after it broke;
// each call takes a stream of its own (kept open for the next call), so
// that concurrent calls do not wait for each other.
type RPCClient struct {
	dial    Dialer
	log     *slog.Logger
	onEvent func(string)

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
}

// NewRPCClient returns a client that opens its sessions with dial.
func NewRPCClient(dial Dialer, o RPCClientOptions) *RPCClient {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &RPCClient{dial: dial, log: o.Logger, onEvent: o.Session, sessions: map[string]*session{}}
}

// session is one yamux session to a peer, or the attempt to open it.
type session struct {
	addr  string
	ready chan struct{} // closed once mux or err is set
	mux   *yamux.Session
	err   error

	mu   sync.Mutex
	idle []*stream
}

// stream is a yamux stream with its codec, between two calls.
type stream struct {
	st  *yamux.Stream
	buf []byte // the request being sent
	enc *codec.Encoder
	dec *codec.Decoder
}

// Apply sends an encoded command to the leader at addr (its raft
// address) and returns the index it was committed at.
func (c *RPCClient) Apply(ctx context.Context, addr string, data []byte) (uint64, error) {
	return c.call(ctx, addr, &rpcRequest{Op: opApply, Command: data})
}

// ReadIndex asks the leader at addr for a read index.
func (c *RPCClient) ReadIndex(ctx context.Context, addr string, verify bool) (uint64, error) {
	return c.call(ctx, addr, &rpcRequest{Op: opReadIndex, Verify: verify})
}

func (c *RPCClient) call(ctx context.Context, addr string, req *rpcRequest) (uint64, error) {
	s, err := c.session(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNotDelivered, err)
	}
	st, err := s.take()
	if err != nil {
		c.drop(s)
		return 0, fmt.Errorf("%w: open a stream to the leader at %s: %v", ErrNotDelivered, addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Timeout = int64(time.Until(dl))
	}
	// ctx bounds the call: its end puts the stream's deadline in the past
	// (and ctx.Err is set by then, for the error to say so).
	_ = st.st.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = st.st.SetDeadline(time.Unix(1, 0)) })
	resp, sent, err := st.roundTrip(req)
	reusable := stop() // false: ctx ended, and with it the stream's deadline
	if err != nil {
		// The stream may yet receive the answer: it is not reused.
		_ = st.st.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		if s.mux.IsClosed() {
			c.drop(s)
		}
		if !sent {
			return 0, fmt.Errorf("%w: send to the leader at %s: %v", ErrNotDelivered, addr, err)
		}
		return 0, fmt.Errorf("forward to leader at %s: no answer: %w; the request may or may not have been applied", addr, err)
	}
	if reusable {
		s.put(st)
	} else {
		_ = st.st.Close()
	}
	if resp.Error != nil {
		return 0, fromWire(resp.Error, "leader at "+addr+" answered")
	}
	return resp.Index, nil
}

// roundTrip sends req and reads its answer. sent reports whether any of
// req may have reached the leader: a stream refuses a write before it
// sends anything with ErrStreamClosed, ErrConnectionReset or ErrTimeout.
func (st *stream) roundTrip(req *rpcRequest) (resp rpcResponse, sent bool, err error) {
	st.buf = st.buf[:0]
	st.enc.ResetBytes(&st.buf)
	if err := st.enc.Encode(req); err != nil {
		return resp, false, err
	}
	if n, err := st.st.Write(st.buf); err != nil {
		refused := n == 0 && (errors.Is(err, yamux.ErrStreamClosed) || errors.Is(err, yamux.ErrConnectionReset) || errors.Is(err, yamux.ErrTimeout))
		return resp, !refused, err
	}
	err = st.dec.Decode(&resp)
	return resp, true, err
}

// session returns the open session to addr, opening one when there is
// none or it has ended; concurrent calls wait for the same opening.
func (c *RPCClient) session(ctx context.Context, addr string) (*session, error) {
	c.mu.Lock()
	s := c.sessions[addr]
	if s != nil {
		select {
		case <-s.ready:
			if s.err != nil || s.mux.IsClosed() {
				if s.err == nil {
					c.event(SessionLost)
					c.log.Warn("forwarding session to the leader was lost; opening another", "leader", addr)
				}
				delete(c.sessions, addr)
				s = nil
			}
		default:
		}
	}
	if s == nil {
		if c.closed {
			c.mu.Unlock()
			return nil, errors.New("this peer is stopping")
		}
		s = &session{addr: addr, ready: make(chan struct{})}
		c.sessions[addr] = s
		go c.open(s)
	}
	c.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// open dials s's peer and starts its session.
func (c *RPCClient) open(s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn, err := c.dial(ctx, s.addr)
	if err == nil {
		s.mux, err = yamux.Client(&frameConn{Conn: conn}, muxConfig(c.log))
		if err != nil {
			_ = conn.Close()
		}
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if err == nil && closed {
		_ = s.mux.Close()
		err = errors.New("this peer is stopping")
	}
	if err != nil {
		s.err = fmt.Errorf("open a session to the leader at %s: %w", s.addr, err)
		c.event(SessionFailed)
		c.log.Warn("could not open a forwarding session to the leader", "leader", s.addr, "err", err)
	} else {
		c.event(SessionOpened)
		c.log.Info("forwarding session to the leader opened", "leader", s.addr)
	}
	close(s.ready)
}

func (c *RPCClient) event(e string) {
	if c.onEvent != nil {
		c.onEvent(e)
	}
}

// drop forgets s (if it is still addr's) and closes it.
func (c *RPCClient) drop(s *session) {
	c.mu.Lock()
	if c.sessions[s.addr] == s {
		delete(c.sessions, s.addr)
		if s.err == nil {
			c.event(SessionLost)
			c.log.Warn("forwarding session to the leader was lost", "leader", s.addr)
		}
	}
	c.mu.Unlock()
	if s.mux != nil {
		_ = s.mux.Close()
	}
}

// take returns an idle stream of s, or opens one.
func (s *session) take() (*stream, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		st := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return st, nil
	}
	s.mu.Unlock()
	ys, err := s.mux.OpenStream()
	if err != nil {
		return nil, err
	}
	st := &stream{st: ys, dec: codec.NewDecoder(bufio.NewReaderSize(ys, 512), msgpack)}
	st.enc = codec.NewEncoderBytes(&st.buf, msgpack)
	return st, nil
}

// put keeps st for the next call.
func (s *session) put(st *stream) {
	s.mu.Lock()
	if len(s.idle) < maxIdleStreams {
		s.idle = append(s.idle, st)
		st = nil
	}
	s.mu.Unlock()
	if st != nil {
		_ = st.st.Close()
	}
}

// Close closes every session; calls in flight fail.
func (c *RPCClient) Close() {
	c.mu.Lock()
	c.closed = true
	sessions := c.sessions
	c.sessions = map[string]*session{}
	c.mu.Unlock()
	for _, s := range sessions {
		select {
		case <-s.ready:
			if s.mux != nil {
				_ = s.mux.Close()
			}
		default: // open sees closed and closes it
		}
	}
}
