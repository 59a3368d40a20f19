package compute_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// parker is a driver whose first build of serverID parks it (Handle.Await);
// every other step is done at once.
type parker struct {
	script
	builds, deletes calls

	mu sync.Mutex
	h  *compute.Handle
	s  fsm.Server // as parked
}

func newParker() *parker {
	p := &parker{}
	p.build = func(ctx context.Context, h *compute.Handle, s fsm.Server) error {
		if p.builds.add(ctx, s); s.ID != serverID || p.builds.of(serverID) > 1 {
			return nil
		}
		p.mu.Lock()
		p.h, p.s = h, s
		p.mu.Unlock()
		return h.Await(s)
	}
	p.del = func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
		p.deletes.add(ctx, s)
		return nil
	}
	return p
}

func (p *parker) parked() (*compute.Handle, fsm.Server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.h, p.s
}

// parkedServer runs a manager with a parker and cfg, and creates serverID,
// which it returns parked.
func parkedServer(t *testing.T, cfg compute.Config) (*oneHost, *compute.Manager, *parker) {
	t.Helper()
	c := twoHosts(t)
	p := newParker()
	m := start(t, c, cfg, p)
	c.create(t, serverID, "h1")
	waitFor(t, "the server parked", 10*time.Second, func() bool { return m.Parked() == 1 })
	return c, m, p
}

// A parked server holds no worker, and gets none until Wake: with one
// worker, other servers build meanwhile; Wake resumes it.
func TestAwaitParksWithoutAWorker(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, m, p := parkedServer(t, compute.Config{Workers: 1, Registerer: reg})
	if got := metric(t, reg, "corral_servers_awaiting_backend"); got != 1 {
		t.Errorf("corral_servers_awaiting_backend = %v, want 1", got)
	}
	// Two more servers, two more scans: each finds the first parked.
	for _, id := range []string{"10000000-0000-4000-9000-000000000011", "10000000-0000-4000-9000-000000000012"} {
		c.create(t, id, "h1")
		waitStatus(t, c, id, fsm.StatusActive)
	}
	if n := p.builds.of(serverID); n != 1 || m.Parked() != 1 {
		t.Fatalf("the parked server was built %d times and %d servers are parked; want once, and it still parked", n, m.Parked())
	}
	h, s := p.parked()
	if !h.Awaiting(s) {
		t.Fatal("Awaiting: false for the parked server")
	}
	h.Wake(s)
	waitStatus(t, c, serverID, fsm.StatusActive)
	if n := p.builds.of(serverID); n != 2 || m.Parked() != 0 {
		t.Fatalf("after Wake: %d builds and %d parked, want 2 and 0", n, m.Parked())
	}
	if got := metric(t, reg, "corral_server_await_seconds"); got != 1 {
		t.Errorf("corral_server_await_seconds has %v samples, want 1", got)
	}
}

// A delete requested while a build waits for the backend unparks the
// server at once: a worker deletes it, no Wake needed.
func TestDeleteUnparksABuild(t *testing.T) {
	c, m, p := parkedServer(t, compute.Config{})
	c.must(t, &fsm.DeleteServer{ID: serverID})
	waitStatus(t, c, serverID, fsm.StatusDeleted)
	if n := p.deletes.n(); n != 1 || m.Parked() != 0 {
		t.Fatalf("%d deletes, %d parked; want 1 and 0", n, m.Parked())
	}
	if h, s := p.parked(); h.Awaiting(s) {
		t.Fatal("Awaiting: true for the build a delete replaced")
	}
}

// A parked server the log moves is no longer parked; back at this host
// (a new epoch), a new worker takes it up without a Wake.
func TestMoveDropsThePark(t *testing.T) {
	c, m, p := parkedServer(t, compute.Config{})
	c.move(t, serverID, "h2")
	waitFor(t, "the park dropped", 10*time.Second, func() bool { return m.Parked() == 0 })
	c.move(t, serverID, "h1")
	waitStatus(t, c, serverID, fsm.StatusActive)
	p.builds.mu.Lock()
	defer p.builds.mu.Unlock()
	if got := p.builds.epochs[len(p.builds.epochs)-1]; len(p.builds.epochs) != 2 || got != 3 {
		t.Fatalf("builds at epochs %v, want [1 3]", p.builds.epochs)
	}
}
