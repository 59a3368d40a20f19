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

// oneHost is a cluster of one host whose log is a local store: commands
// apply at once, or fail with fail when it is set.
type oneHost struct {
	name  string
	store *fsm.Store
	known bool // every peer knows every command type

	mu   sync.Mutex
	idx  uint64
	fail error
	cmds []fsm.Command
}

func (c *oneHost) Name() string      { return c.name }
func (c *oneHost) Store() *fsm.Store { return c.store }
func (c *oneHost) IsLeader() bool    { return true }

func (c *oneHost) CommandKnown(fsm.CommandType) bool { return c.known }

func (c *oneHost) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	c.idx++
	if cmd.Header().At.IsZero() {
		cmd.Header().At = time.Date(2026, 12, 1, 0, 0, int(c.idx), 0, time.UTC)
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	c.cmds = append(c.cmds, cmd)
	r := c.store.Apply(c.idx, data)
	return c.idx, r.Err
}

func (c *oneHost) must(t *testing.T, cmd fsm.Command) {
	t.Helper()
	if _, err := c.Propose(context.Background(), cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
}

const serverID = "10000000-0000-4000-9000-000000000001"

// withRebuild returns a host owning one ACTIVE server on an Ironic node,
// with a rebuild requested.
func withRebuild(t *testing.T) *oneHost {
	t.Helper()
	c := &oneHost{name: "h1", store: fsm.New(), known: true}
	c.must(t, &fsm.RegisterHost{Name: "h1", RaftAddr: "127.0.0.2:1", APIAddr: "127.0.0.2:2", GossipAddr: "127.0.0.2:3"})
	node := "00000000-0000-4000-8000-000000000001"
	c.must(t, &fsm.SyncNodes{Upserts: []fsm.Node{{UUID: node, ResourceClass: "baremetal-gold", ProvisionState: "active",
		PowerState: "power on", InstanceUUID: serverID, AllocationUUID: serverID,
		Properties: map[string]string{"cpus": "8", "memory_mb": "1024", "local_gb": "10"}}}})
	c.must(t, &fsm.AdoptServer{ID: serverID, Name: "db-1", Flavor: fsm.Flavor{ID: "f1", Name: "bm", VCPUs: 8, RAM: 1024, Disk: 10, RxTxFactor: 1},
		ImageRef: "img-1", NodeUUID: node, AllocationUUID: serverID, Host: "h1"})
	c.must(t, &fsm.RequestServerActionWithID{RequestServerAction: fsm.RequestServerAction{
		Meta: fsm.Meta{RequestID: "req-1"}, ID: serverID, Kind: fsm.ActionRebuild, ImageRef: "img-2"}})
	return c
}

// actor is a virt driver whose Act is the test's.
type actor struct {
	act func(ctx context.Context, h *compute.Handle, s fsm.Server) error
}

func (a *actor) Kind() string                                              { return fsm.KindIronic }
func (a *actor) Build(context.Context, *compute.Handle, fsm.Server) error  { return nil }
func (a *actor) Delete(context.Context, *compute.Handle, fsm.Server) error { return nil }
func (a *actor) Act(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	return a.act(ctx, h, s)
}

// run runs a manager for c with act until done is closed or the test ends.
func run(t *testing.T, c *oneHost, lease time.Duration, act func(ctx context.Context, h *compute.Handle, s fsm.Server) error) {
	t.Helper()
	m, err := compute.New(compute.Config{IntentLease: lease}, c, &actor{act: act})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond) // pacing the poll
	}
}

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

func mustServer(t *testing.T, c *oneHost) fsm.Server {
	t.Helper()
	s, err := c.store.Server(serverID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
