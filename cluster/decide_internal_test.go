package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
)

// The decider's rules, with an fsm.Store applied in memory in place of
// raft (fakeLog): the commits, competing entries and node syncs a test
// needs, without a cluster.

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func nodeID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i) }
func sid(i int) string    { return fmt.Sprintf("10000000-0000-4000-9000-%012d", i) }

// fakeLog applies every commit to s at consecutive indexes, one at a
// time. Before each commit it runs before (which may apply competing
// entries); hold, when set, is received from before every CreateServers
// commit (so a test can let the queue fill), and recorded, when set, is
// signalled once the entry's servers are recorded in batches.
type fakeLog struct {
	tb testing.TB
	s  *fsm.Store

	mu       sync.Mutex
	index    uint64
	commits  int
	batches  [][]string // server ids of every CreateServers entry
	before   func(n int, c fsm.Command)
	refresh  func() error
	refreshN int

	hold     chan struct{}
	recorded chan struct{}
}

func newFakeLog(tb testing.TB) *fakeLog { return &fakeLog{tb: tb, s: fsm.New()} }

// applyLocked applies c outside the decider (a competing entry), with
// l.mu held; ok does so for a fixture.
func (l *fakeLog) applyLocked(c fsm.Command) fsm.Result {
	l.tb.Helper()
	data, err := fsm.Encode(c)
	if err != nil {
		l.tb.Fatalf("encode %T: %v", c, err)
	}
	l.index++
	return l.s.Apply(l.index, data)
}

func (l *fakeLog) ok(c fsm.Command) {
	l.tb.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.applyLocked(c); r.Err != nil {
		l.tb.Fatalf("apply %s: %v", c.Type(), r.Err)
	}
}

func (l *fakeLog) commit(_ context.Context, c fsm.Command) (uint64, any, error) {
	var ids []string
	switch cs := c.(type) {
	case *fsm.CreateServers:
		for _, s := range cs.Servers {
			ids = append(ids, s.ID)
		}
	case *fsm.CreateServerSets:
		for _, set := range cs.Sets {
			for _, m := range set.Members {
				ids = append(ids, m.ID)
			}
		}
	}
	if ids != nil {
		l.mu.Lock()
		l.batches = append(l.batches, ids)
		l.mu.Unlock()
		if l.recorded != nil {
			l.recorded <- struct{}{}
		}
		if l.hold != nil {
			<-l.hold
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commits++
	if l.before != nil {
		l.before(l.commits, c)
	}
	r := l.applyLocked(c)
	return l.index, r.Value, r.Err
}

func (l *fakeLog) refreshNodes(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refreshN++
	if l.refresh != nil {
		return l.refresh()
	}
	return nil
}

func (l *fakeLog) counts() (commits, refreshes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commits, l.refreshN
}

func goldFlavor() fsm.Flavor {
	return fsm.Flavor{ID: "bm", Name: "bare-metal-gold", VCPUs: 2, RAM: 4096, Disk: 40, IsPublic: true,
		ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0",
			"resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}}
}

func goldNodes(from, to int) []fsm.Node {
	var out []fsm.Node
	for i := from; i < to; i++ {
		out = append(out, fsm.Node{UUID: nodeID(i), ResourceClass: "baremetal-gold", ProvisionState: "available", PowerState: "power off"})
	}
	return out
}

// hostsFixture registers two ironic hosts and a hypervisor, and the
// bare-metal flavor "bm", without nodes.
func hostsFixture(t testing.TB) *fakeLog {
	l := newFakeLog(t)
	l.ok(&fsm.RegisterHost{Meta: fsm.Meta{At: t0}, Name: "h1", Kind: fsm.KindIronic})
	l.ok(&fsm.RegisterHost{Meta: fsm.Meta{At: t0}, Name: "h2", Kind: fsm.KindIronic})
	l.ok(&fsm.RegisterHost{Meta: fsm.Meta{At: t0}, Name: "hv", Kind: fsm.KindHypervisor})
	l.ok(&fsm.CreateFlavor{Meta: fsm.Meta{At: t0}, Flavor: goldFlavor()})
	return l
}

// bareMetalFixture is hostsFixture with ten free gold nodes.
func bareMetalFixture(t testing.TB) *fakeLog {
	l := hostsFixture(t)
	l.ok(&fsm.SyncNodes{Meta: fsm.Meta{At: t0}, Upserts: goldNodes(0, 10)})
	return l
}

func boot(i int) *fsm.CreateServer {
	return &fsm.CreateServer{Meta: fsm.Meta{At: t0}, ID: sid(i), Name: fmt.Sprintf("s%d", i), FlavorID: "bm", ImageRef: "img"}
}

// Entries committed between a decision and its own take what it chose,
// many times over: the decider decides again each time and the server
// gets the node that is left, never a stale-decision error.
func TestDecideAgainUntilTheDecisionHolds(t *testing.T) {
	l := bareMetalFixture(t)
	// Before each of the first eight attempts, another server claims the
	// node this decision chose.
	l.before = func(n int, c fsm.Command) {
		if n > 8 {
			return
		}
		l.applyLocked(&fsm.CreateServer{ID: fmt.Sprintf("00000000-0000-4000-a000-%012d", n), Name: "x",
			FlavorID: "bm", ImageRef: "img", Host: "h1", Claim: c.(*fsm.CreateServer).Claim})
	}
	d := newDecider(l.s, l)
	if _, _, err := d.decide(context.Background(), boot(1), nil, false); err != nil {
		t.Fatal(err)
	}
	s, _ := l.s.Server(sid(1))
	if n, _ := l.counts(); n != 9 || s.Status != fsm.StatusBuild || s.ClaimedNode == "" {
		t.Fatalf("%d attempts, server %s on %q", n, s.Status, s.ClaimedNode)
	}
}

// When competing entries take every node, the answer is "No valid host",
// not a stale decision.
func TestDecideAgainUntilNothingFits(t *testing.T) {
	l := bareMetalFixture(t)
	l.before = func(n int, c fsm.Command) {
		if claim := c.(*fsm.CreateServer).Claim; claim != nil {
			l.applyLocked(&fsm.CreateServer{ID: fmt.Sprintf("00000000-0000-4000-a000-%012d", n), Name: "x",
				FlavorID: "bm", ImageRef: "img", Host: "h1", Claim: claim})
		}
	}
	d := newDecider(l.s, l)
	if _, _, err := d.decide(context.Background(), boot(1), nil, false); err != nil {
		t.Fatal(err)
	}
	s, _ := l.s.Server(sid(1))
	if s.Status != fsm.StatusError || !strings.Contains(s.Fault.Message, "No valid host") {
		t.Fatalf("server %s %v, want ERROR No valid host", s.Status, s.Fault)
	}
	if n, _ := l.counts(); n != 11 { // ten nodes taken one by one, then the ERROR entry
		t.Fatalf("%d attempts", n)
	}
}

// A boot that finds no node refreshes the node mirror once and takes a
// node enrolled since the last sync; a failed refresh decides on the
// mirror as it is.
func TestDecideRefreshesTheMirrorBeforeNoValidHost(t *testing.T) {
	l := hostsFixture(t)
	l.refresh = func() error {
		l.applyLocked(&fsm.SyncNodes{Upserts: goldNodes(1, 2)})
		return nil
	}
	d := newDecider(l.s, l)
	if _, _, err := d.decide(context.Background(), boot(1), nil, false); err != nil {
		t.Fatal(err)
	}
	if s, _ := l.s.Server(sid(1)); s.Status != fsm.StatusBuild || s.ClaimedNode != nodeID(1) {
		t.Fatalf("server %s on %q (%v)", s.Status, s.ClaimedNode, s.Fault)
	}
	// Nothing left: one refresh more, then ERROR.
	l.refresh = func() error { return errors.New("Ironic is unreachable") }
	if _, _, err := d.decide(context.Background(), boot(2), nil, false); err != nil {
		t.Fatal(err)
	}
	if s, _ := l.s.Server(sid(2)); s.Status != fsm.StatusError {
		t.Fatalf("server %s", s.Status)
	}
	if _, refreshes := l.counts(); refreshes != 2 {
		t.Fatalf("%d refreshes", refreshes)
	}
}

// Commands without decisions go straight to the log, once.
func TestDecidePassesOtherCommandsThrough(t *testing.T) {
	l := newFakeLog(t)
	l.refresh = func() error { t.Fatal("refresh for a flavor"); return nil }
	d := newDecider(l.s, l)
	_, _, err := d.decide(context.Background(), &fsm.CreateFlavor{Flavor: goldFlavor()}, []string{"h1"}, true)
	if n, _ := l.counts(); err != nil || n != 1 {
		t.Fatalf("%d commits: %v", n, err)
	}
}

// A refusal that deciding again cannot cure is answered at once, not
// retried as a stale decision.
func TestDecideAnswersOtherRefusalsAtOnce(t *testing.T) {
	l := bareMetalFixture(t)
	l.ok(withDecision(t, l.s, boot(1)))
	d := newDecider(l.s, l)
	_, _, err := d.decide(context.Background(), boot(1), nil, false) // the same id again
	if n, _ := l.counts(); !errors.Is(err, fsm.ErrConflict) || errors.Is(err, fsm.ErrStaleDecision) || n != 1 {
		t.Fatalf("after %d attempts: %v", n, err)
	}
}

// The hosts gossip sees gone are avoided, and recorded in the entry.
func TestDecideAvoidsGoneHosts(t *testing.T) {
	l := bareMetalFixture(t)
	d := newDecider(l.s, l)
	for i := range 4 {
		if _, _, err := d.decide(context.Background(), boot(i), []string{"h1"}, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		if s, _ := l.s.Server(sid(i)); s.Host != "h2" {
			t.Fatalf("server %d on %q, want h2 (h1 avoided)", i, s.Host)
		}
	}
	l.ok(&fsm.SetHostStatus{Name: "h2", Status: fsm.HostDown})
	_, v, err := d.decide(context.Background(), &fsm.ReassignServers{From: "h2", Reason: fsm.ReasonHostDown}, []string{"h1"}, false)
	if moved, _ := v.(int); err != nil || moved != 0 {
		t.Fatalf("plan onto avoided hosts only: %d moved, %v", moved, err)
	}
	_, v, err = d.decide(context.Background(), &fsm.ReassignServers{From: "h2", Reason: fsm.ReasonHostDown}, nil, false)
	if moved, _ := v.(int); err != nil || moved != 4 {
		t.Fatalf("plan: %d moved, %v; want the 4 servers of h2 on h1", moved, err)
	}
}

// withDecision is c as the leader would commit it.
func withDecision(t *testing.T, s *fsm.Store, c fsm.Command) fsm.Command {
	t.Helper()
	d, _ := s.Schedule(c, nil)
	return d.Command
}
