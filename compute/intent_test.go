package compute_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// An intent that cannot be committed stops the worker before the side
// effect, and no side effect is ever sent without one; once the log
// answers again, a new worker commits the intent and sends it, once.
func TestFailedIntentStopsTheWorker(t *testing.T) {
	c := withRebuild(t)
	c.mu.Lock()
	c.fail = errors.New("no leader")
	c.mu.Unlock()
	var mu sync.Mutex
	sent, attempts := 0, 0
	run(t, c, time.Second, func(ctx context.Context, h *compute.Handle, s fsm.Server) error {
		mu.Lock()
		attempts++
		mu.Unlock()
		if s.Action.Intent != nil {
			return nil // the side effect was sent under the intent
		}
		if _, err := h.BeginAction(ctx, s, "rebuild", "w0"); err != nil {
			if !errors.Is(err, compute.ErrIntent) {
				t.Errorf("BeginAction: %v, want ErrIntent", err)
			}
			return err
		}
		mu.Lock()
		sent++
		mu.Unlock()
		return nil
	})
	waitFor(t, "two attempts while the log refuses", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts >= 2
	})
	mu.Lock()
	if sent != 0 {
		t.Fatalf("%d side effects sent without a committed intent", sent)
	}
	mu.Unlock()
	c.mu.Lock()
	c.fail = nil
	c.mu.Unlock()
	waitFor(t, "the rebuild finished", 20*time.Second, func() bool {
		s, err := c.store.Server(serverID)
		return err == nil && s.Action == nil && s.ImageRef == "img-2"
	})
	mu.Lock()
	defer mu.Unlock()
	if sent != 1 {
		t.Fatalf("%d side effects sent, want 1", sent)
	}
}

// BeginAction is refused while some live peer does not know the intent's
// command type: the action waits for the upgrade.
func TestBeginActionWaitsForEveryPeer(t *testing.T) {
	c := withRebuild(t)
	c.known = false
	s, _ := c.store.Server(serverID)
	h := compute.NewHandleForTest(t, c)
	if _, err := h.BeginAction(context.Background(), s, "rebuild", "w0"); !errors.Is(err, compute.ErrIntent) {
		t.Fatalf("BeginAction with an older peer: %v, want ErrIntent", err)
	}
	for _, cmd := range c.cmds {
		if _, ok := cmd.(*fsm.StartServerAction); ok {
			t.Fatal("an intent was proposed although a peer cannot apply it")
		}
	}
}

// An intent found in the log that this manager did not commit is waited
// out for twice the lease from when the manager first saw the server; one
// it committed itself, until its own lease ended plus the lease again.
func TestAwaitIntent(t *testing.T) {
	const lease = 300 * time.Millisecond
	c := withRebuild(t)
	// A previous owner's (or a previous process's) intent.
	c.must(t, &fsm.StartServerAction{ID: serverID, Host: "h1", Epoch: 1, Kind: fsm.ActionRebuild,
		RequestedAt: mustServer(t, c).Action.RequestedAt, Step: "rebuild", Witness: "w0"})
	waited := make(chan time.Duration, 2)
	start := time.Now()
	run(t, c, lease, func(ctx context.Context, h *compute.Handle, s fsm.Server) error {
		t0 := time.Now()
		if err := h.AwaitIntent(ctx, s); err != nil {
			return err
		}
		waited <- time.Since(t0)
		if s.Action.Intent.Witness == "w0" {
			// As if the node still showed w0: commit our own and "send".
			l, err := h.BeginAction(ctx, s, "rebuild", "w1")
			if err != nil {
				return err
			}
			if time.Until(l.Deadline) > lease || time.Until(l.Deadline) <= 0 {
				t.Errorf("lease ends in %s, want within %s", time.Until(l.Deadline), lease)
			}
			// Our own intent, waited out by a second attempt.
			cur := mustServer(t, c)
			t1 := time.Now()
			if err := h.AwaitIntent(ctx, cur); err != nil {
				return err
			}
			if got := time.Since(t1); got < lease {
				t.Errorf("own intent waited %s, want at least the lease's end plus %s", got, lease)
			}
		}
		return nil
	})
	select {
	case got := <-waited:
		if total := time.Since(start); total < 2*lease {
			t.Fatalf("a foreign intent was waited out after %s (this call %s), want at least %s", total, got, 2*lease)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the action never ran")
	}
}
