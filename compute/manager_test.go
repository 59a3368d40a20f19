package compute_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// A transient failure is retried by the same worker after a backoff that
// doubles (0.5 s, 1 s, 2 s, ...).
func TestTransientErrorsBackOff(t *testing.T) {
	c := twoHosts(t)
	const fails = 3
	var builds calls
	start(t, c, compute.Config{}, &script{build: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
		if builds.add(ctx, s) <= fails {
			return errors.New("Ironic unavailable")
		}
		return nil
	}})
	c.create(t, serverID, "h1")
	waitStatus(t, c, serverID, fsm.StatusActive)
	builds.mu.Lock()
	for i := 1; i < len(builds.ctxs); i++ {
		if builds.ctxs[i] != builds.ctxs[0] {
			t.Errorf("build %d ran in a new worker, want the first worker's retry", i+1)
		}
	}
	builds.mu.Unlock()
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if got := builds.gap(i + 1); got < want {
			t.Errorf("retry %d came after %s, want at least %s", i+1, got, want)
		}
	}
}

// A PermanentError ends a build, or an action, in ERROR with its message
// as the fault, and is not retried.
func TestPermanentErrorEndsInError(t *testing.T) {
	const msg = "image img-1 cannot boot on this node"
	fail := func(k *calls) step {
		return func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
			k.add(ctx, s)
			return compute.Permanent("image %s cannot boot on this node", s.ImageRef)
		}
	}
	t.Run("build", func(t *testing.T) {
		c := twoHosts(t)
		reg := prometheus.NewRegistry()
		var builds calls
		start(t, c, compute.Config{Registerer: reg}, &script{build: fail(&builds)})
		c.create(t, serverID, "h1")
		s := waitStatus(t, c, serverID, fsm.StatusError)
		if s.Fault == nil || s.Fault.Message != msg {
			t.Fatalf("fault %+v, want %q", s.Fault, msg)
		}
		if n := builds.n(); n != 1 {
			t.Errorf("%d builds, want 1", n)
		}
		if got := metric(t, reg, "corral_server_builds_total", "outcome", "error"); got != 1 {
			t.Errorf("corral_server_builds_total{outcome=error} = %v, want 1", got)
		}
	})
	t.Run("action", func(t *testing.T) {
		c := withRebuild(t)
		var acts calls
		start(t, c, compute.Config{}, &script{act: fail(&acts)})
		s := waitStatus(t, c, serverID, fsm.StatusError)
		if s.Fault == nil || s.Fault.Message != msg || s.Action != nil {
			t.Fatalf("fault %+v, action %+v: want %q and the action over", s.Fault, s.Action, msg)
		}
		if n := acts.n(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}

// A build still failing after BuildTimeout ends in ERROR, with the last
// error in the fault.
func TestBuildTimeoutEndsInError(t *testing.T) {
	c := twoHosts(t)
	start(t, c, compute.Config{BuildTimeout: 200 * time.Millisecond}, &script{build: func(context.Context, *compute.Handle, fsm.Server) error {
		return errors.New("no node matches")
	}})
	c.create(t, serverID, "h1")
	s := waitStatus(t, c, serverID, fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "timed out after 200ms: no node matches") {
		t.Fatalf("fault %+v, want the timeout and the last error", s.Fault)
	}
}

// A server has at most one worker: scans while its step runs start none.
func TestOneWorkerPerServer(t *testing.T) {
	c := twoHosts(t)
	const slow = "10000000-0000-4000-9000-0000000000ff"
	var mu sync.Mutex
	inFlight, most, slowBuilds := 0, 0, 0
	release := make(chan struct{})
	var others calls
	start(t, c, compute.Config{}, &script{build: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
		if s.ID != slow {
			others.add(ctx, s)
			return nil
		}
		mu.Lock()
		inFlight++
		slowBuilds++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	c.create(t, slow, "h1")
	waitFor(t, "the slow build started", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slowBuilds == 1
	})
	// Each server built is a scan that found the slow one still building.
	for i, id := range []string{"10000000-0000-4000-9000-000000000011", "10000000-0000-4000-9000-000000000012", "10000000-0000-4000-9000-000000000013"} {
		c.create(t, id, "h1")
		waitStatus(t, c, id, fsm.StatusActive)
		if n := others.n(); n != i+1 {
			t.Fatalf("%d other builds, want %d", n, i+1)
		}
	}
	close(release)
	waitStatus(t, c, slow, fsm.StatusActive)
	mu.Lock()
	defer mu.Unlock()
	if slowBuilds != 1 || most != 1 {
		t.Fatalf("the slow server was built %d times, by %d workers at once; want once, by one", slowBuilds, most)
	}
}

// The manager counts builds (by outcome) and their duration, deletes,
// actions (by kind and outcome) and takeovers.
func TestMetrics(t *testing.T) {
	c := twoHosts(t)
	reg := prometheus.NewRegistry()
	const (
		a = "10000000-0000-4000-9000-0000000000a1" // built, then deleted
		b = "10000000-0000-4000-9000-0000000000b1" // taken over from h2
	)
	start(t, c, compute.Config{Registerer: reg}, &script{})
	c.create(t, a, "h1")
	waitStatus(t, c, a, fsm.StatusActive)
	c.must(t, &fsm.DeleteServer{ID: a})
	waitStatus(t, c, a, fsm.StatusDeleted)
	c.create(t, b, "h2") // not ours: no work, no takeover
	c.move(t, b, "h1")
	waitStatus(t, c, b, fsm.StatusActive)
	c.must(t, &fsm.RequestServerAction{ID: b, Kind: fsm.ActionStop})
	waitFor(t, "the stop done", 10*time.Second, func() bool { return c.server(t, b).Action == nil })

	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"corral_server_builds_total", []string{"outcome", "active"}, 2},
		{"corral_server_builds_total", []string{"outcome", "error"}, 0},
		{"corral_server_build_duration_seconds", nil, 2},
		{"corral_server_deletes_total", nil, 1},
		{"corral_takeover_seconds", nil, 1},
		{"corral_server_actions_total", []string{"action", fsm.ActionStop, "outcome", "done"}, 1},
		{"corral_fenced_operations_total", nil, 0},
		{"corral_servers_awaiting_backend", nil, 0},
	} {
		if got := metric(t, reg, m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
}
