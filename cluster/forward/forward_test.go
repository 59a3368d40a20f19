package forward_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corral-dev/corral/cluster/forward"
	"github.com/corral-dev/corral/fsm"
)

// paths are the test's: the API names the real ones.
var paths = forward.Paths{Apply: "/peers/apply", ReadIndex: "/peers/read-index"}

// leader answers with a fixed index or error and records what it got.
type leader struct {
	idx     uint64
	err     error
	got     []byte
	verify  bool
	applies atomic.Int32
}

func (l *leader) ApplyForwarded(_ context.Context, data []byte) (uint64, error) {
	l.applies.Add(1)
	l.got = data
	return l.idx, l.err
}

func (l *leader) ReadIndex(_ context.Context, verify bool) (uint64, error) {
	l.verify = verify
	return l.idx, l.err
}

// serve mounts the handler behind a token check, as the API does, and
// counts the TCP connections the server accepts.
func serve(t *testing.T, l forward.Leader) (addr string, conns *atomic.Int32) {
	t.Helper()
	return serveTB(t, l)
}

func serveTB(t testing.TB, l forward.Leader) (addr string, conns *atomic.Int32) {
	t.Helper()
	conns = new(atomic.Int32)
	h := forward.NewHandler(l, paths)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Auth-Token") != "peer" {
			forward.WriteError(w, http.StatusUnauthorized, errors.New("unknown token"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://"), conns
}

func TestApplyAndReadIndexRoundTrip(t *testing.T) {
	l := &leader{idx: 42}
	addr, conns := serve(t, l)
	c := forward.NewClient("peer", nil, paths)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		idx, err := c.Apply(ctx, addr, []byte("cmd"))
		if err != nil || idx != 42 {
			t.Fatalf("apply: %d, %v", idx, err)
		}
	}
	if string(l.got) != "cmd" {
		t.Errorf("leader got %q", l.got)
	}
	idx, err := c.ReadIndex(ctx, addr, true)
	if err != nil || idx != 42 || !l.verify {
		t.Fatalf("read index: %d, %v (verify %v)", idx, err, l.verify)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("six requests used %d connections, want one kept alive", n)
	}
}

// errorCase is a leader's error and what the follower must make of it.
type errorCase struct {
	name    string
	err     error
	is      []error
	isNot   []error
	message string
}

// errorCases are the error kinds both transports of forwarding carry.
var errorCases = []errorCase{
	{"not found", fmt.Errorf("%w: server x", fsm.ErrNotFound), []error{fsm.ErrNotFound}, []error{fsm.ErrConflict}, "not found: server x"},
	{"conflict", fmt.Errorf("%w: flavor exists", fsm.ErrConflict), []error{fsm.ErrConflict}, []error{fsm.ErrFenced}, "conflict: flavor exists"},
	{"fenced", fmt.Errorf("%w: moved to p2", fsm.ErrFenced), []error{fsm.ErrFenced, fsm.ErrConflict}, nil, "moved to p2"},
	{"stale decision", fmt.Errorf("%w: retry", fsm.ErrStaleDecision), []error{fsm.ErrConflict}, []error{fsm.ErrFenced}, "retry"},
	{"quota exceeded", fmt.Errorf("%w: 10 of 10 instances", fsm.ErrQuotaExceeded), []error{fsm.ErrQuotaExceeded, fsm.ErrConflict}, []error{fsm.ErrFenced}, "10 of 10 instances"},
	{"invalid", fmt.Errorf("%w: bad", fsm.ErrInvalid), []error{fsm.ErrInvalid}, nil, "invalid: bad"},
	{"not leader", forward.ErrNotLeader, []error{forward.ErrNotLeader}, []error{forward.ErrNoLeader}, ""},
	{"no leader", fmt.Errorf("%w: term 3", forward.ErrNoLeader), []error{forward.ErrNoLeader}, nil, ""},
	{"unavailable", forward.Unavailable("shutting down"), []error{forward.ErrNoLeader}, []error{forward.ErrNotLeader}, ""},
	{"internal", errors.New("disk on fire"), nil, []error{fsm.ErrNotFound, forward.ErrNoLeader, forward.ErrNotDelivered}, "disk on fire"},
}

func (tc errorCase) check(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range tc.is {
		if !errors.Is(err, want) {
			t.Errorf("%v is not %v", err, want)
		}
	}
	for _, not := range tc.isNot {
		if errors.Is(err, not) {
			t.Errorf("%v is %v", err, not)
		}
	}
	if !strings.Contains(err.Error(), tc.message) {
		t.Errorf("message %q lacks %q", err, tc.message)
	}
}

func TestErrorsKeepTheirKind(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := serve(t, &leader{err: tc.err})
			_, err := forward.NewClient("peer", nil, paths).Apply(context.Background(), addr, []byte("cmd"))
			tc.check(t, err)
			if tc.name == "internal" && !strings.Contains(err.Error(), "answered 500: disk on fire") {
				t.Errorf("message %q lacks the leader's status", err)
			}
		})
	}
}

func TestRefusedConnectionIsNotDelivered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, err = forward.NewClient("peer", nil, paths).Apply(context.Background(), addr, []byte("cmd"))
	if !errors.Is(err, forward.ErrNotDelivered) {
		t.Fatalf("got %v, want ErrNotDelivered", err)
	}
}

func TestAuthenticationErrorIsNotRetried(t *testing.T) {
	l := &leader{idx: 1}
	addr, _ := serve(t, l)
	_, err := forward.NewClient("wrong", nil, paths).Apply(context.Background(), addr, []byte("cmd"))
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "unknown token") {
		t.Fatalf("got %v, want the leader's 401 and message", err)
	}
	for _, retry := range []error{forward.ErrNotDelivered, forward.ErrNoLeader, forward.ErrNotLeader} {
		if errors.Is(err, retry) {
			t.Errorf("%v is %v", err, retry)
		}
	}
	if l.applies.Load() != 0 {
		t.Error("the leader applied an unauthenticated command")
	}
}

func TestHandlerRefusesOtherMethodsAndPaths(t *testing.T) {
	l := &leader{idx: 1}
	h := forward.NewHandler(l, paths)
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, paths.Apply, nil),
		httptest.NewRequest(http.MethodPost, paths.ReadIndex, nil),
		httptest.NewRequest(http.MethodPost, "/peers/other", strings.NewReader("x")),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body, _ := io.ReadAll(w.Result().Body)
		if w.Code != http.StatusNotFound || !strings.Contains(string(body), `"kind":"not_found"`) {
			t.Errorf("%s %s: %d %s", r.Method, r.URL.Path, w.Code, body)
		}
	}
	if l.applies.Load() != 0 {
		t.Error("a refused request reached the leader")
	}
}

// A client the API gave no paths says so, and sends nothing.
func TestClientWithoutPathsSendsNothing(t *testing.T) {
	_, err := forward.NewClient("peer", nil, forward.Paths{}).Apply(context.Background(), "127.0.0.1:1", []byte("cmd"))
	if err == nil || !strings.Contains(err.Error(), "paths are not set") || errors.Is(err, forward.ErrNotDelivered) {
		t.Fatalf("apply without paths: %v", err)
	}
}
