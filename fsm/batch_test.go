package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// batchLeader is a Leader whose commits apply through a, one at a time,
// counting the entries. hold, when set, is received from before every
// CreateServers commit (so a test can let the queue fill), and before
// runs just before each CreateServers entry applies.
type batchLeader struct {
	mu       sync.Mutex
	a        *applier
	batches  [][]string // server ids of every CreateServers entry
	hold     chan struct{}
	recorded chan struct{} // when set, signalled after each entry is recorded
	before   func(n int, c *CreateServers)
	refresh  func()
	refreshN int
}

func (b *batchLeader) leader() Leader {
	return Leader{
		Commit: func(_ context.Context, c Command) (uint64, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			r := b.a.apply(c)
			return b.a.index, r.Err
		},
		CommitBatch: func(_ context.Context, c Command) (uint64, any, error) {
			cs := c.(*CreateServers)
			var ids []string
			for _, s := range cs.Servers {
				ids = append(ids, s.ID)
			}
			b.mu.Lock()
			b.batches = append(b.batches, ids)
			b.mu.Unlock()
			if b.recorded != nil {
				b.recorded <- struct{}{}
			}
			if b.hold != nil {
				<-b.hold
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.before != nil {
				b.before(len(b.batches), cs)
			}
			r := b.a.apply(c)
			return b.a.index, r.Value, r.Err
		},
		RefreshNodes: func(context.Context) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.refreshN++
			if b.refresh != nil {
				b.refresh()
			}
			return nil
		},
	}
}

// bootAll decides n new servers of flavor "bm" at once through Decide and
// returns each one's error.
func bootAll(t *testing.T, s *Store, l Leader, n int) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := &CreateServer{ID: sid(i), Name: fmt.Sprintf("s%d", i), FlavorID: "bm", ImageRef: "img"}
			_, errs[i] = s.Decide(ctx, c, l)
		}()
	}
	wg.Wait()
	return errs
}

// waitQueued waits until n requests wait in the batch queue.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.queueMu.Lock()
		q := len(s.queue)
		s.queueMu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkDistinctNodes checks that every live server holds its own node and
// returns the number of BUILD and ERROR servers.
func checkDistinctNodes(t *testing.T, s *Store) (build, errored int) {
	t.Helper()
	held := map[string]string{}
	for _, srv := range s.Servers() {
		switch srv.Status {
		case StatusBuild:
			build++
			if srv.ClaimedNode == "" {
				t.Fatalf("server %s is BUILD without a node", srv.ID)
			}
			if other, dup := held[srv.ClaimedNode]; dup {
				t.Fatalf("servers %s and %s both claim node %s", other, srv.ID, srv.ClaimedNode)
			}
			held[srv.ClaimedNode] = srv.ID
		case StatusError:
			errored++
			if srv.Fault == nil || srv.ClaimedNode != "" {
				t.Fatalf("server %s: ERROR with fault %v and node %q", srv.ID, srv.Fault, srv.ClaimedNode)
			}
		}
	}
	return build, errored
}

// Twenty boots for ten nodes, queued together: decided in one entry, ten
// on distinct nodes and ten "No valid host", the mirror refreshed once.
func TestBatchedBootsShareOneEntry(t *testing.T) {
	a := bareMetalFixture(t)
	b := &batchLeader{a: a, hold: make(chan struct{}), recorded: make(chan struct{}, 100)}
	done := make(chan []error)
	go func() { done <- bootAll(t, a.s, b.leader(), 20) }()
	// The first request to hold the lock commits what had arrived; the
	// others queue behind it and go in the next entry.
	<-b.recorded
	b.mu.Lock()
	first := len(b.batches[0])
	b.mu.Unlock()
	if first < 20 {
		waitQueued(t, a.s, 20-first)
	}
	close(b.hold)
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	if first < 20 && (len(b.batches) != 2 || len(b.batches[1]) != 20-first) {
		t.Fatalf("entries %v, want one of %d servers and one of %d", b.batches, first, 20-first)
	}
	build, errored := checkDistinctNodes(t, a.s)
	if build != 10 || errored != 10 {
		t.Fatalf("%d BUILD, %d ERROR, want 10 and 10", build, errored)
	}
	if b.refreshN != 1 {
		t.Fatalf("mirror refreshed %d times, want once", b.refreshN)
	}
}

// A decision overtaken by an entry applied between deciding and
// committing (a node sync that removed the claimed node) is decided again
// in the next batch; the others of its batch stand. Nobody sees a stale
// decision.
func TestBatchedBootOvertakenIsDecidedAgain(t *testing.T) {
	a := bareMetalFixture(t)
	b := &batchLeader{a: a}
	var overtaken, removed string
	b.before = func(n int, c *CreateServers) {
		if n != 1 {
			return
		}
		// Take away the node the first server of the first entry claimed.
		overtaken = c.Servers[0].ID
		for prov := range c.Servers[0].Claim {
			removed = prov
		}
		a.ok(&SyncNodes{Meta: at(5), Missing: []string{removed}})
	}
	errs := bootAll(t, a.s, b.leader(), 6)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	build, errored := checkDistinctNodes(t, a.s)
	if build != 6 || errored != 0 {
		t.Fatalf("%d BUILD, %d ERROR, want 6 BUILD on the 9 nodes left", build, errored)
	}
	srv, err := a.s.Server(overtaken)
	if err != nil || srv.ClaimedNode == "" || srv.ClaimedNode == removed {
		t.Fatalf("overtaken server %s: %+v, %v", overtaken, srv, err)
	}
	seen := 0
	for _, ids := range b.batches {
		for _, id := range ids {
			if id == overtaken {
				seen++
			}
		}
	}
	if seen != 2 {
		t.Fatalf("overtaken server was in %d entries, want 2 (decided again once): %v", seen, b.batches)
	}
}

// Starved requests trigger one refresh of the mirror, after which nodes
// enrolled meanwhile are used.
func TestBatchedBootsRefreshTheMirrorOnce(t *testing.T) {
	a := bareMetalFixture(t)
	var more []Node
	for i := 10; i < 20; i++ {
		more = append(more, Node{UUID: nodeID(i), ResourceClass: "baremetal-gold", ProvisionState: "available", PowerState: "power off"})
	}
	b := &batchLeader{a: a}
	b.refresh = func() { a.ok(&SyncNodes{Meta: at(5), Upserts: more}) }
	for i, err := range bootAll(t, a.s, b.leader(), 20) {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	build, errored := checkDistinctNodes(t, a.s)
	if build != 20 || errored != 0 {
		t.Fatalf("%d BUILD, %d ERROR, want 20 BUILD", build, errored)
	}
	if b.refreshN != 1 {
		t.Fatalf("mirror refreshed %d times, want once", b.refreshN)
	}
}

// A request whose context ended before its batch was decided is answered
// with its context's error and creates nothing.
func TestBatchedBootEndedRequestCreatesNothing(t *testing.T) {
	a := bareMetalFixture(t)
	b := &batchLeader{a: a, hold: make(chan struct{})}
	first := make(chan error)
	go func() {
		_, err := a.s.Decide(context.Background(), &CreateServer{ID: sid(0), Name: "s0", FlavorID: "bm", ImageRef: "img"}, b.leader())
		first <- err
	}()
	waitHeld := func() {
		// The first request holds the lock, waiting in CommitBatch.
		deadline := time.Now().Add(10 * time.Second)
		for a.s.decideMu.TryLock() {
			a.s.decideMu.Unlock()
			if time.Now().After(deadline) {
				t.Fatal("the first request never took the decision lock")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitHeld()
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error)
	go func() {
		_, err := a.s.Decide(ctx, &CreateServer{ID: sid(1), Name: "s1", FlavorID: "bm", ImageRef: "img"}, b.leader())
		second <- err
	}()
	waitQueued(t, a.s, 1)
	cancel()
	close(b.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("ended request: %v, want context.Canceled", err)
	}
	if _, err := a.s.Server(sid(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the ended request's server exists: %v", err)
	}
}

// Apply answers every server of a CreateServers entry on its own, in order.
func TestApplyCreateServersAnswersEach(t *testing.T) {
	a := bareMetalFixture(t)
	boot := func(i int) CreateServer {
		c := CreateServer{ID: sid(i), Name: "s", FlavorID: "bm", ImageRef: "img"}
		a.s.Prepare(&c)
		return c
	}
	s0, s1 := boot(0), boot(1)
	dup := s0
	bad := CreateServer{ID: sid(3), Name: "s", FlavorID: "nope", ImageRef: "img"}
	r := a.apply(&CreateServers{Meta: at(3), Servers: []CreateServer{s0, dup, bad, s1}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	res := r.Value.(BatchResult)
	if len(res) != 4 || res[0].Err != nil || !errors.Is(res[1].Err, ErrConflict) || !errors.Is(res[2].Err, ErrInvalid) || res[3].Err != nil {
		t.Fatalf("results %+v", res)
	}
	for _, id := range []string{sid(0), sid(1)} {
		srv, err := a.s.Server(id)
		if err != nil || !srv.CreatedAt.Equal(at(3).At) {
			t.Fatalf("server %s: %+v, %v (want created at the entry's time)", id, srv, err)
		}
	}
	for _, c := range []*CreateServers{{Meta: at(4)}, {Meta: at(4), Servers: make([]CreateServer, MaxCreateBatch+1)}} {
		if r := a.apply(c); !errors.Is(r.Err, ErrInvalid) {
			t.Fatalf("%d servers: %v, want ErrInvalid", len(c.Servers), r.Err)
		}
	}
}

// BenchmarkDecideBatched: boots decided 64 at a time against 10^4 free
// nodes, each batch applied at once (no log): the leader's own cost per
// boot.
func BenchmarkDecideBatched(b *testing.B) {
	a := newApplier(b)
	a.ok(&RegisterHost{Meta: at(0), Name: "h1", Kind: KindIronic})
	a.ok(&RegisterHost{Meta: at(0), Name: "h2", Kind: KindIronic})
	a.ok(&RegisterHost{Meta: at(0), Name: "h3", Kind: KindIronic})
	f := testFlavor("bm", "bm")
	f.ExtraSpecs = map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	a.ok(&CreateFlavor{Meta: at(0), Flavor: f})
	const nodes = 10000
	for start := 0; start < nodes; start += 500 {
		var up []Node
		for i := start; i < start+500; i++ {
			up = append(up, Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ResourceClass: "baremetal-gold",
				ProvisionState: "available", PowerState: "power off"})
		}
		a.ok(&SyncNodes{Meta: at(0), Upserts: up})
	}
	bl := &batchLeader{a: a}
	l := bl.leader()
	b.ResetTimer()
	made := 0
	for made < b.N {
		n := min(64, b.N-made)
		if made+n > nodes {
			b.Fatalf("at most %d boots (the nodes): run with -benchtime %dx or less", nodes, nodes)
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &CreateServer{ID: fmt.Sprintf("10000000-0000-4000-9000-%012d", made+i), Name: "s", FlavorID: "bm", ImageRef: "img"}
				if _, err := a.s.Decide(context.Background(), c, l); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		made += n
	}
}
