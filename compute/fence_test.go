package compute_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// A worker is cancelled, its backend call included, as soon as the log
// gives its server to another owner, or to this host at another epoch.
func TestWorkerCancelledWhenTheServerMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(t *testing.T, c *oneHost)
		// epoch is the epoch at which this host builds the server next,
		// 0 for never.
		epoch uint64
	}{
		{"to another owner", func(t *testing.T, c *oneHost) { c.move(t, serverID, "h2") }, 0},
		{"to another epoch", func(t *testing.T, c *oneHost) {
			// Away and back in one burst of entries: the next scan finds
			// the server ours, at epoch 3.
			c.move(t, serverID, "h2")
			c.move(t, serverID, "h1")
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := twoHosts(t)
			reg := prometheus.NewRegistry()
			var builds calls
			stopped := make(chan error, 1)
			start(t, c, compute.Config{Registerer: reg}, &script{build: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
				if builds.add(ctx, s) > 1 {
					return nil
				}
				<-ctx.Done() // a deploy in flight
				stopped <- ctx.Err()
				return ctx.Err()
			}})
			c.create(t, serverID, "h1")
			waitFor(t, "the build started", 10*time.Second, func() bool { return builds.n() == 1 })
			tc.move(t, c)
			select {
			case err := <-stopped:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("the build ended with %v, want its context cancelled", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the worker of a server the log moved was not cancelled")
			}
			if got := metric(t, reg, "corral_fenced_operations_total"); got != 1 {
				t.Errorf("corral_fenced_operations_total = %v, want 1", got)
			}
			if tc.epoch == 0 {
				return
			}
			waitStatus(t, c, serverID, fsm.StatusActive)
			builds.mu.Lock()
			defer builds.mu.Unlock()
			if got := builds.epochs[len(builds.epochs)-1]; got != tc.epoch {
				t.Fatalf("built at epoch %d, want %d", got, tc.epoch)
			}
		})
	}
}

// A step that comes back fenced (the leader refused it: the log moved the
// server, though this replica may not show it yet) stops its worker at
// once: no retry by that worker, and the fence is counted.
func TestFencedErrorStopsTheWorker(t *testing.T) {
	c := twoHosts(t)
	reg := prometheus.NewRegistry()
	var builds calls
	start(t, c, compute.Config{Registerer: reg}, &script{build: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
		switch builds.add(ctx, s) {
		case 1:
			return fmt.Errorf("spawning: %w", fsm.ErrFenced)
		default:
			return nil
		}
	}})
	c.create(t, serverID, "h1")
	// The replica never learns of a move here: the next scan starts a
	// new worker, which builds.
	waitStatus(t, c, serverID, fsm.StatusActive)
	builds.mu.Lock()
	first := builds.ctxs[0]
	builds.mu.Unlock()
	if first.Err() == nil {
		t.Fatal("the worker that met ErrFenced is still running")
	}
	builds.mu.Lock()
	second := builds.ctxs[1]
	builds.mu.Unlock()
	if second == first {
		t.Fatal("the worker that met ErrFenced retried the step itself")
	}
	if got := metric(t, reg, "corral_fenced_operations_total"); got != 1 {
		t.Errorf("corral_fenced_operations_total = %v, want 1", got)
	}
}

// A step whose intent was not committed stops its worker; a new worker
// comes only after a hold-back that grows with each failure (0.5 s, 1 s,
// 2 s, ...) and starts over once a step succeeds.
func TestFailedIntentHoldsBackNewWorkers(t *testing.T) {
	c := twoHosts(t)
	const fails = 3
	var builds, deletes calls
	start(t, c, compute.Config{}, &script{
		build: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
			if builds.add(ctx, s) <= fails {
				return fmt.Errorf("%w: no leader", compute.ErrIntent)
			}
			return nil
		},
		del: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
			if deletes.add(ctx, s) == 1 {
				return fmt.Errorf("%w: no leader", compute.ErrIntent)
			}
			return nil
		},
	})
	// The user deletes the server in the entry after the build's outcome:
	// no scan sees the server idle, which would drop the hold-back anyway.
	c.mu.Lock()
	c.then = func(cmd fsm.Command) []fsm.Command {
		if st, ok := cmd.(*fsm.SetServerTask); ok && st.Status == fsm.StatusActive {
			return []fsm.Command{&fsm.DeleteServer{ID: st.ID}}
		}
		return nil
	}
	c.mu.Unlock()
	c.create(t, serverID, "h1")
	waitStatus(t, c, serverID, fsm.StatusDeleted)

	builds.mu.Lock()
	for i := 1; i < len(builds.ctxs); i++ {
		if builds.ctxs[i-1].Err() == nil || builds.ctxs[i-1] == builds.ctxs[i] {
			t.Errorf("build %d was retried by the worker whose intent failed", i+1)
		}
	}
	builds.mu.Unlock()
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if got := builds.gap(i + 1); got < want {
			t.Errorf("failed intent %d held the next worker back %s, want at least %s", i+1, got, want)
		}
	}
	// Succeeded since: the delete's failed intent holds back 0.5 s again,
	// not the 4 s that would come next.
	if got := deletes.gap(1); got >= 3*time.Second {
		t.Errorf("after a successful step the hold-back was %s, want it reset to 0.5 s (plus one scan)", got)
	}
}
