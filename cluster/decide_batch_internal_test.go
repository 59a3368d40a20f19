package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// bootAll decides n new servers of flavor "bm" at once, batched, and
// returns each one's error.
func bootAll(t testing.TB, d *decider, n int) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, errs[i] = d.decide(ctx, boot(i), nil, true)
		})
	}
	wg.Wait()
	return errs
}

// waitQueued polls until n requests wait in the batch queue.
func waitQueued(t *testing.T, d *decider, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.queueMu.Lock()
		q := len(d.queue)
		d.queueMu.Unlock()
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
func checkDistinctNodes(t *testing.T, s *fsm.Store) (build, errored int) {
	t.Helper()
	held := map[string]string{}
	for _, srv := range s.Servers() {
		switch srv.Status {
		case fsm.StatusBuild:
			build++
			if srv.ClaimedNode == "" {
				t.Fatalf("server %s is BUILD without a node", srv.ID)
			}
			if other, dup := held[srv.ClaimedNode]; dup {
				t.Fatalf("servers %s and %s both claim node %s", other, srv.ID, srv.ClaimedNode)
			}
			held[srv.ClaimedNode] = srv.ID
		case fsm.StatusError:
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
	l := bareMetalFixture(t)
	l.hold, l.recorded = make(chan struct{}), make(chan struct{}, 100)
	d := newDecider(l.s, l)
	done := make(chan []error)
	go func() { done <- bootAll(t, d, 20) }()
	// The first request to hold the lock commits what had arrived; the
	// others queue behind it and go in the next entry.
	<-l.recorded
	l.mu.Lock()
	first := len(l.batches[0])
	l.mu.Unlock()
	if first < 20 {
		waitQueued(t, d, 20-first)
	}
	close(l.hold)
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	if first < 20 && (len(l.batches) != 2 || len(l.batches[1]) != 20-first) {
		t.Fatalf("entries %v, want one of %d servers and one of %d", l.batches, first, 20-first)
	}
	build, errored := checkDistinctNodes(t, l.s)
	if build != 10 || errored != 10 {
		t.Fatalf("%d BUILD, %d ERROR, want 10 and 10", build, errored)
	}
	if _, refreshes := l.counts(); refreshes != 1 {
		t.Fatalf("mirror refreshed %d times, want once", refreshes)
	}
}

// A decision overtaken by an entry applied between deciding and
// committing (a node sync that removed the claimed node) is decided again
// in the next batch; the others of its batch stand. Nobody sees a stale
// decision.
func TestBatchedBootOvertakenIsDecidedAgain(t *testing.T) {
	l := bareMetalFixture(t)
	var overtaken, removed string
	l.before = func(n int, c fsm.Command) {
		if n != 1 {
			return
		}
		// Take away the node the first server of the first entry claimed.
		first := c.(*fsm.CreateServers).Servers[0]
		overtaken = first.ID
		for prov := range first.Claim {
			removed = prov
		}
		l.applyLocked(&fsm.SyncNodes{Missing: []string{removed}})
	}
	d := newDecider(l.s, l)
	for i, err := range bootAll(t, d, 6) {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	build, errored := checkDistinctNodes(t, l.s)
	if build != 6 || errored != 0 {
		t.Fatalf("%d BUILD, %d ERROR, want 6 BUILD on the 9 nodes left", build, errored)
	}
	srv, err := l.s.Server(overtaken)
	if err != nil || srv.ClaimedNode == "" || srv.ClaimedNode == removed {
		t.Fatalf("overtaken server %s: %+v, %v", overtaken, srv, err)
	}
	seen := 0
	for _, ids := range l.batches {
		for _, id := range ids {
			if id == overtaken {
				seen++
			}
		}
	}
	if seen != 2 {
		t.Fatalf("overtaken server was in %d entries, want 2 (decided again once): %v", seen, l.batches)
	}
}

// Starved requests trigger one refresh of the mirror, after which nodes
// enrolled meanwhile are used.
func TestBatchedBootsRefreshTheMirrorOnce(t *testing.T) {
	l := bareMetalFixture(t)
	l.refresh = func() error {
		l.applyLocked(&fsm.SyncNodes{Upserts: goldNodes(10, 20)})
		return nil
	}
	d := newDecider(l.s, l)
	for i, err := range bootAll(t, d, 20) {
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
	}
	build, errored := checkDistinctNodes(t, l.s)
	if build != 20 || errored != 0 {
		t.Fatalf("%d BUILD, %d ERROR, want 20 BUILD", build, errored)
	}
	if _, refreshes := l.counts(); refreshes != 1 {
		t.Fatalf("mirror refreshed %d times, want once", refreshes)
	}
}

// A request whose context ended before its batch was decided is answered
// with its context's error and creates nothing.
func TestBatchedBootEndedRequestCreatesNothing(t *testing.T) {
	l := bareMetalFixture(t)
	l.hold = make(chan struct{})
	d := newDecider(l.s, l)
	first := make(chan error)
	go func() {
		_, _, err := d.decide(context.Background(), boot(0), nil, true)
		first <- err
	}()
	// The first request holds the lock, waiting in commit.
	deadline := time.Now().Add(10 * time.Second)
	for d.mu.TryLock() {
		d.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the first request never took the decision lock")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error)
	go func() {
		_, _, err := d.decide(ctx, boot(1), nil, true)
		second <- err
	}()
	waitQueued(t, d, 1)
	cancel()
	close(l.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("ended request: %v, want context.Canceled", err)
	}
	if _, err := l.s.Server(sid(1)); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("the ended request's server exists: %v", err)
	}
}

// BenchmarkDecideBatched: boots decided 64 at a time against 10^4 free
// nodes, each batch applied at once (no log): the leader's own cost per
// boot.
func BenchmarkDecideBatched(b *testing.B) {
	l := hostsFixture(b)
	l.ok(&fsm.RegisterHost{Name: "h3", Kind: fsm.KindIronic})
	const nodes = 10000
	for start := 0; start < nodes; start += 500 {
		var up []fsm.Node
		for i := start; i < start+500; i++ {
			up = append(up, fsm.Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ResourceClass: "baremetal-gold",
				ProvisionState: "available", PowerState: "power off"})
		}
		l.ok(&fsm.SyncNodes{Upserts: up})
	}
	d := newDecider(l.s, l)
	b.ResetTimer()
	made := 0
	for made < b.N {
		n := min(64, b.N-made)
		if made+n > nodes {
			b.Fatalf("at most %d boots (the nodes): run with -benchtime %dx or less", nodes, nodes)
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c := &fsm.CreateServer{ID: fmt.Sprintf("10000000-0000-4000-9000-%012d", made+i), Name: "s", FlavorID: "bm", ImageRef: "img"}
				if _, _, err := d.decide(context.Background(), c, nil, true); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		made += n
	}
}

// Boot requests of several servers queued together share an entry of at
// most fsm.MaxSetServers servers; each request is answered on its own.
func TestBatchedBootRequestsShareEntries(t *testing.T) {
	l := bareMetalFixture(t)
	l.hold, l.recorded = make(chan struct{}), make(chan struct{}, 100)
	d := newDecider(l.s, l)
	const requests, size = 3, 600
	errs := make([]error, requests)
	var wg sync.WaitGroup
	start := func(i int) {
		wg.Go(func() {
			set := fsm.ServerSet{ReservationID: fmt.Sprintf("r-%08d", i), MinCount: 1,
				Server: fsm.CreateServer{Meta: fsm.Meta{RequestID: fmt.Sprintf("req-%d", i)}, Name: "web", FlavorID: "bm", ImageRef: "img"}}
			for j := range size {
				set.Members = append(set.Members, fsm.SetMember{ID: sid(i*size + j)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, errs[i] = d.decide(ctx, &fsm.CreateServerSets{Sets: []fsm.ServerSet{set}}, nil, true)
		})
	}
	start(0)
	<-l.recorded // the first request's entry waits; the others queue behind it
	start(1)
	start(2)
	waitQueued(t, d, 2)
	close(l.hold)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if len(l.batches) != 3 {
		t.Fatalf("%d entries, want 3: two queued requests of %d servers exceed %d", len(l.batches), size, fsm.MaxSetServers)
	}
	placed := 0
	for _, s := range l.s.Servers() {
		if s.Host != "" {
			placed++
		}
		if want := fmt.Sprintf("req-%d", indexOf(s.ReservationID)); s.RequestID != want {
			t.Fatalf("server %s of %s has request id %q, want %q", s.ID, s.ReservationID, s.RequestID, want)
		}
	}
	if placed != 10 {
		t.Fatalf("%d servers placed on 10 nodes", placed)
	}
}

// indexOf is the request number of a reservation id r-%08d.
func indexOf(res string) int {
	var i int
	_, _ = fmt.Sscanf(res, "r-%08d", &i)
	return i
}
