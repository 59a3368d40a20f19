package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

func goldNode(i int, maintenance bool) fsm.Node {
	return fsm.Node{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ResourceClass: "baremetal-gold",
		ProvisionState: "available", PowerState: "power off", Maintenance: maintenance}
}

// Fifty boots at once through the three peers, while node syncs keep
// putting free nodes into maintenance and back (so decisions are
// overtaken by entries committed in between): no boot is answered with a
// stale decision, and every one gets its own node. Three rounds, each on a
// fresh cluster.
func TestConcurrentBootsNeverSeeAStaleDecision(t *testing.T) {
	for round := 1; round <= 3; round++ {
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) { concurrentBoots(t, round) })
	}
}

func concurrentBoots(t *testing.T, round int) {
	const boots, nodes, churn = 50, 80, 20
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := len(leader.Node.Store().Hosts()); n != 3 {
			return fmt.Errorf("%d hosts registered", n)
		}
		return nil
	})
	f := &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1, RxTxFactor: 1,
		ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}}
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), f); err != nil {
		t.Fatal(err)
	}
	var all []fsm.Node
	for i := range nodes {
		all = append(all, goldNode(i, false))
	}
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), &fsm.SyncNodes{Upserts: all}); err != nil {
		t.Fatal(err)
	}

	// Churn: every sync puts another set of nodes into maintenance and
	// takes the previous set out (at most churn of them at once, so
	// nodes - churn >= boots always fit).
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		syncs := 0
		defer func() { churned <- syncs }()
		var prev []int
		for {
			select {
			case <-stop:
				return
			default:
			}
			var up []fsm.Node
			for _, i := range prev {
				up = append(up, goldNode(i, false))
			}
			prev = r.Perm(nodes)[:churn]
			for _, i := range prev {
				up = append(up, goldNode(i, true))
			}
			if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), &fsm.SyncNodes{Upserts: up}); err == nil {
				syncs++
			}
		}
	}()

	peers := h.Running()
	var wg sync.WaitGroup
	errs := make(chan error, boots)
	ids := make([]string, boots)
	for i := range boots {
		ids[i] = fmt.Sprintf("10000000-0000-4000-8%03d-%012d", round, i)
		wg.Go(func() {
			cmd := &fsm.CreateServer{ID: ids[i], Name: fmt.Sprintf("s-%d", i), FlavorID: "bm", ImageRef: "img"}
			if _, err := peers[i%len(peers)].Node.Propose(ctxT(t, 30*time.Second), cmd); err != nil {
				errs <- fmt.Errorf("boot %d through %s: %w", i, peers[i%len(peers)].Name, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d node syncs committed during the boots", <-churned)
	close(errs)
	for err := range errs {
		switch {
		case errors.Is(err, fsm.ErrStaleDecision):
			t.Errorf("a stale decision reached the user: %v", err)
		case errors.Is(err, fsm.ErrConflict), errors.Is(err, fsm.ErrInvalid), errors.Is(err, fsm.ErrNotFound):
			t.Errorf("a boot was refused: %v", err)
		default:
			// An election under load ("leadership lost while committing")
			// is an honest answer: the server exists or not, checked below.
			t.Logf("not a refusal: %v", err)
		}
	}
	// An election under load may still be settling: a new leader answers
	// linearizable reads once it committed its first entry.
	testkit.Eventually(t, 20*time.Second, func() error {
		return h.Leader(10*time.Second).Node.ReadBarrier(ctxT(t, 5*time.Second), cluster.Linearizable)
	})
	held := map[string]string{}
	entries := map[uint64]int{} // servers created by each entry
	for _, id := range ids {
		s, err := h.Leader(10 * time.Second).Node.Store().Server(id)
		if errors.Is(err, fsm.ErrNotFound) {
			continue // its boot was answered with an error: not created
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[s.EpochIndex]++
		if s.Status != fsm.StatusBuild || s.ClaimedNode == "" {
			t.Fatalf("server %s is %s claiming %q (%v): there were enough nodes", id, s.Status, s.ClaimedNode, s.Fault)
		}
		if other, dup := held[s.ClaimedNode]; dup {
			t.Fatalf("node %s claimed by %s and %s", s.ClaimedNode, other, id)
		}
		held[s.ClaimedNode] = id
	}
	// Boots that arrived together were decided together: some entry
	// created several servers.
	if len(held) > 1 && len(entries) == len(held) {
		t.Errorf("%d servers created by %d entries: no boots were decided together", len(held), len(entries))
	}
	t.Logf("%d servers created by %d entries", len(held), len(entries))
}

// The leader refreshes its node mirror once before it records a boot as
// "No valid host", through the MirrorSync the peer was given.
func TestBootRefreshesTheMirrorBeforeNoValidHost(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	leader := h.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		if n := len(leader.Node.Store().Hosts()); n != 3 {
			return fmt.Errorf("%d hosts registered", n)
		}
		return nil
	})
	f := &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1, RxTxFactor: 1,
		ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}}
	if _, err := leader.Node.Propose(ctxT(t, 5*time.Second), f); err != nil {
		t.Fatal(err)
	}
	// The "Ironic" this sync reads has one node the mirror does not.
	ms := &fakeSync{node: leader.Node}
	for _, p := range h.Running() {
		p.Node.SetMirrorSync(ms)
	}
	fol := h.Followers(leader)[0]
	boot := func(id string) fsm.Server {
		if _, err := fol.Node.Propose(ctxT(t, 10*time.Second), &fsm.CreateServer{ID: id, Name: "s", FlavorID: "bm", ImageRef: "img"}); err != nil {
			t.Fatal(err)
		}
		s, err := fol.Node.Store().Server(id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := boot("20000000-0000-4000-8000-000000000001"); s.Status != fsm.StatusBuild || s.ClaimedNode != goldNode(1, false).UUID {
		t.Fatalf("server %s claiming %q (%v), want BUILD on the node the refresh found", s.Status, s.ClaimedNode, s.Fault)
	}
	if s := boot("20000000-0000-4000-8000-000000000002"); s.Status != fsm.StatusError {
		t.Fatalf("server %s with every node taken", s.Status)
	}
	if got := ms.calls(); got != 2 {
		t.Fatalf("%d refreshes for two boots that found no node", got)
	}
}

type fakeSync struct {
	node interface {
		Propose(context.Context, fsm.Command) (uint64, error)
	}
	mu sync.Mutex
	n  int
}

func (f *fakeSync) SyncOnce(ctx context.Context) error {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	_, err := f.node.Propose(ctx, &fsm.SyncNodes{Upserts: []fsm.Node{goldNode(1, false)}})
	return err
}

func (f *fakeSync) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
