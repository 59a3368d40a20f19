package forward_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// rpcServer serves the RPC for l on loopback without authentication (the
// cluster authenticates the connections it hands the server) and keeps
// the connections it accepted, for the tests to break.
type rpcServer struct {
	addr  string
	srv   *forward.Server
	mu    sync.Mutex
	conns []net.Conn
}

func serveRPC(t *testing.T, l forward.Leader) *rpcServer {
	t.Helper()
	return serveRPCTB(t, l)
}

func serveRPCTB(t testing.TB, l forward.Leader) *rpcServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rpcServer{addr: ln.Addr().String(), srv: forward.NewServer(l, forward.ServerOptions{Logger: slog.New(slog.DiscardHandler)})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go s.srv.ServeConn(c, "follower")
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.srv.Close()
	})
	return s
}

// breakConns closes every connection the server accepted.
func (s *rpcServer) breakConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// rpcClient dials without authentication and counts dials and events.
type rpcClient struct {
	*forward.RPCClient
	dials  atomic.Int32
	mu     sync.Mutex
	events map[string]int
}

func newRPCClient(t *testing.T) *rpcClient {
	t.Helper()
	c := &rpcClient{events: map[string]int{}}
	c.RPCClient = forward.NewRPCClient(func(ctx context.Context, addr string) (net.Conn, error) {
		c.dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}, forward.RPCClientOptions{Logger: slog.New(slog.DiscardHandler), Session: func(e string) {
		c.mu.Lock()
		c.events[e]++
		c.mu.Unlock()
	}})
	t.Cleanup(c.Close)
	return c
}

func (c *rpcClient) event(e string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events[e]
}

func TestRPCApplyAndReadIndex(t *testing.T) {
	l := &leader{idx: 42}
	s := serveRPC(t, l)
	c := newRPCClient(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		idx, err := c.Apply(ctx, s.addr, []byte("cmd"))
		if err != nil || idx != 42 {
			t.Fatalf("apply: %d, %v", idx, err)
		}
	}
	if string(l.got) != "cmd" {
		t.Errorf("leader got %q", l.got)
	}
	idx, err := c.ReadIndex(ctx, s.addr, true)
	if err != nil || idx != 42 || !l.verify {
		t.Fatalf("read index: %d, %v (verify %v)", idx, err, l.verify)
	}
	// A command larger than a frame's window arrives whole.
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if _, err := c.Apply(ctx, s.addr, big); err != nil || !bytes.Equal(l.got, big) {
		t.Fatalf("a command of %d bytes: %v, the leader got %d bytes", len(big), err, len(l.got))
	}
	if n := c.dials.Load(); n != 1 {
		t.Errorf("seven calls dialed %d times, want one session", n)
	}
}

func TestRPCErrorsKeepTheirKind(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			s := serveRPC(t, &leader{err: tc.err})
			_, err := newRPCClient(t).Apply(context.Background(), s.addr, []byte("cmd"))
			tc.check(t, err)
		})
	}
}

// gate is a leader that answers only once n requests are in flight at
// once: many forwards share one session, none waiting for another.
type gate struct {
	n       int32
	waiting atomic.Int32
	all     chan struct{}
	once    sync.Once
}

func (g *gate) ApplyForwarded(ctx context.Context, data []byte) (uint64, error) {
	if g.waiting.Add(1) == g.n {
		g.once.Do(func() { close(g.all) })
	}
	select {
	case <-g.all:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var i uint64
	_, err := fmt.Sscanf(string(data), "cmd %d", &i)
	return i, err
}

func (g *gate) ReadIndex(context.Context, bool) (uint64, error) { return 0, errors.New("unused") }

func TestRPCCallsShareOneSessionWithoutWaiting(t *testing.T) {
	const n = 64
	s := serveRPC(t, &gate{n: n, all: make(chan struct{})})
	c := newRPCClient(t)
	ctx := ctxT(t, 20*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			idx, err := c.Apply(ctx, s.addr, fmt.Appendf(nil, "cmd %d", i))
			if err == nil && idx != uint64(i) {
				err = fmt.Errorf("call %d was answered %d", i, idx)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := c.dials.Load(); d != 1 {
		t.Fatalf("%d calls at once dialed %d times, want one session", n, d)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A session whose connection broke is replaced by the next call.
func TestRPCReconnectsAfterTheSessionBroke(t *testing.T) {
	s := serveRPC(t, &leader{idx: 7})
	c := newRPCClient(t)
	if _, err := c.Apply(ctxT(t, 5*time.Second), s.addr, []byte("cmd")); err != nil {
		t.Fatal(err)
	}
	s.breakConns()
	testkit.Eventually(t, 10*time.Second, func() error {
		idx, err := c.Apply(ctxT(t, 5*time.Second), s.addr, []byte("cmd"))
		if err != nil || idx != 7 {
			return fmt.Errorf("apply after the break: %d, %w", idx, err)
		}
		return nil
	})
	if d, opened, lost := c.dials.Load(), c.event(forward.SessionOpened), c.event(forward.SessionLost); d != 2 || opened != 2 || lost != 1 {
		t.Fatalf("dials %d, sessions opened %d, lost %d; want 2, 2, 1", d, opened, lost)
	}
}

func TestRPCRefusedConnectionIsNotDelivered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := newRPCClient(t)
	_, err = c.Apply(context.Background(), addr, []byte("cmd"))
	if !errors.Is(err, forward.ErrNotDelivered) {
		t.Fatalf("got %v, want ErrNotDelivered", err)
	}
	if c.event(forward.SessionFailed) != 1 {
		t.Fatalf("session events %v, want one failure", c.events)
	}
}

// breaker is a leader whose connection breaks while it applies: the
// follower cannot know whether the write was applied.
type breaker struct {
	s       *rpcServer
	applies atomic.Int32
}

func (b *breaker) ApplyForwarded(context.Context, []byte) (uint64, error) {
	b.applies.Add(1)
	b.s.breakConns()
	return 1, nil
}

func (b *breaker) ReadIndex(context.Context, bool) (uint64, error) { return 1, nil }

func TestRPCBrokenAfterDeliveryIsNotRetryable(t *testing.T) {
	b := &breaker{}
	b.s = serveRPC(t, b)
	_, err := newRPCClient(t).Apply(ctxT(t, 5*time.Second), b.s.addr, []byte("cmd"))
	if err == nil || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("got %v, want an answer lost after delivery", err)
	}
	for _, retry := range []error{forward.ErrNotDelivered, forward.ErrNoLeader, forward.ErrNotLeader} {
		if errors.Is(err, retry) {
			t.Errorf("%v is %v", err, retry)
		}
	}
	if b.applies.Load() != 1 {
		t.Fatalf("the leader applied %d times", b.applies.Load())
	}
}

// slow is a leader that answers when its context ends, and records it.
type slow struct{ deadline chan time.Time }

func (s *slow) ApplyForwarded(ctx context.Context, _ []byte) (uint64, error) {
	dl, _ := ctx.Deadline()
	s.deadline <- dl
	<-ctx.Done()
	return 0, ctx.Err()
}

func (s *slow) ReadIndex(context.Context, bool) (uint64, error) { return 0, nil }

// The follower's deadline bounds the call on both ends.
func TestRPCDeadlineReachesTheLeader(t *testing.T) {
	l := &slow{deadline: make(chan time.Time, 1)}
	s := serveRPC(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	want, _ := ctx.Deadline()
	_, err := newRPCClient(t).Apply(ctx, s.addr, []byte("cmd"))
	// Both ends give up at about the same time: the follower's deadline
	// or the leader's answer that its own passed, whichever comes first.
	if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("got %v, want the deadline", err)
	}
	got := <-l.deadline
	if got.IsZero() || got.After(want.Add(time.Second)) {
		t.Fatalf("the leader's deadline %v, the follower's %v", got, want)
	}
}

func TestRPCRefusesOversizedCommands(t *testing.T) {
	l := &leader{idx: 1}
	s := serveRPC(t, l)
	_, err := newRPCClient(t).Apply(ctxT(t, time.Minute), s.addr, bytes.Repeat([]byte("x"), 8<<20+1))
	if !errors.Is(err, fsm.ErrInvalid) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v, want invalid", err)
	}
	if l.applies.Load() != 0 {
		t.Fatal("the leader applied an oversized command")
	}
}

// BenchmarkForwardTransports puts the two transports of forwarding side
// by side on loopback: writes of 200 bytes from 64 goroutines to a leader
// that answers at once, so that only the transport is measured.
func BenchmarkForwardTransports(b *testing.B) {
	cmd := bytes.Repeat([]byte("x"), 200)
	run := func(b *testing.B, apply func(ctx context.Context) (uint64, error)) {
		b.ReportAllocs()
		b.SetParallelism(32) // × GOMAXPROCS goroutines
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := apply(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("http", func(b *testing.B) {
		addr, _ := serveTB(b, fixed(1))
		c := forward.NewClient("peer", nil, paths)
		run(b, func(ctx context.Context) (uint64, error) { return c.Apply(ctx, addr, cmd) })
	})
	b.Run("rpc", func(b *testing.B) {
		s := serveRPCTB(b, fixed(1))
		c := forward.NewRPCClient(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}, forward.RPCClientOptions{Logger: slog.New(slog.DiscardHandler)})
		defer c.Close()
		run(b, func(ctx context.Context) (uint64, error) { return c.Apply(ctx, s.addr, cmd) })
	})
}

// fixed is a leader that answers every request with its index.
type fixed uint64

func (f fixed) ApplyForwarded(context.Context, []byte) (uint64, error) { return uint64(f), nil }
func (f fixed) ReadIndex(context.Context, bool) (uint64, error)        { return uint64(f), nil }

// countingConn counts the writes on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A request leaves in one write (one packet), its frame's header and body
// together, where yamux alone writes them apart.
func TestRPCRequestIsOneWrite(t *testing.T) {
	s := serveRPC(t, &leader{idx: 1})
	var writes atomic.Int32
	c := forward.NewRPCClient(func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		return countingConn{Conn: conn, writes: &writes}, err
	}, forward.RPCClientOptions{Logger: slog.New(slog.DiscardHandler)})
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	if _, err := c.Apply(ctx, s.addr, []byte("cmd")); err != nil { // opens the stream
		t.Fatal(err)
	}
	const n = 50
	before := writes.Load()
	for range n {
		if _, err := c.Apply(ctx, s.addr, []byte("cmd")); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes.Load() - before; got > n+2 { // a window update or a keep-alive may go too
		t.Fatalf("%d requests took %d writes", n, got)
	}
}
