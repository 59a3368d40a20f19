package neutron

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// slowNeutron answers a port create after delay, as a busy Neutron whose
// API queues the request does, and counts the creates it received.
func slowNeutron(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v2.0/ports" {
			http.NotFound(w, r)
			return
		}
		got.Add(1)
		time.Sleep(delay) // the server's queue, not a test waiting for a state
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"port": {"id": "p1", "network_id": "n1", "device_id": "s1"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// A create written before its send deadline is waited for until Neutron
// answers, however long after the deadline: Neutron carries it out
// anyway, and giving up on its answer only makes the caller create again.
func TestSendByWaitsForTheAnswerOfARequestSentInTime(t *testing.T) {
	srv, got := slowNeutron(t, 600*time.Millisecond)
	c := mustNew(t, Options{AuthType: AuthNone, EndpointOverride: srv.URL, Timeout: 10 * time.Second})
	ctx := WithSendBy(context.Background(), time.Now().Add(200*time.Millisecond))
	p, err := c.CreatePort(ctx, PortCreate{NetworkID: "n1", DeviceID: "s1"})
	if err != nil {
		t.Fatalf("a create sent before its deadline and answered after it: %v", err)
	}
	if p.ID != "p1" || got.Load() != 1 {
		t.Fatalf("port %+v, %d creates received; want p1 and 1", p, got.Load())
	}
}

// A request not started before its send deadline is never sent.
func TestSendByRefusesARequestAfterTheDeadline(t *testing.T) {
	srv, got := slowNeutron(t, 0)
	c := mustNew(t, Options{AuthType: AuthNone, EndpointOverride: srv.URL, Timeout: 10 * time.Second})
	ctx := WithSendBy(context.Background(), time.Now().Add(-time.Millisecond))
	_, err := c.CreatePort(ctx, PortCreate{NetworkID: "n1", DeviceID: "s1"})
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("a create after its send deadline: %v, want ErrNotSent", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a request never sent is not Neutron being unavailable: %v", err)
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("Neutron received %d creates after the send deadline, want 0", n)
	}
}

// A request whose connection cannot be made before the deadline (Neutron's
// listen queue full, here a listener that never accepts) is abandoned at
// the deadline, not at the client's timeout.
func TestSendByAbandonsARequestNotWrittenByTheDeadline(t *testing.T) {
	stuck := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (conn net.Conn, err error) {
		<-ctx.Done() // a dial that never completes until abandoned
		return nil, ctx.Err()
	}}
	c := mustNew(t, Options{AuthType: AuthNone, EndpointOverride: "http://127.0.0.1:9", Timeout: time.Minute,
		HTTPClient: &http.Client{Transport: stuck}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.CreatePort(WithSendBy(ctx, time.Now().Add(100*time.Millisecond)), PortCreate{NetworkID: "n1", DeviceID: "s1"})
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("a create whose connection never opened: %v, want ErrNotSent", err)
	}
}
