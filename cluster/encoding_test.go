package cluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// The leader writes log entries in msgpack only once every peer the log
// reaches reads them: with a peer that does not (as a peer of an older
// version), every entry, through the leader or forwarded, is JSON, and
// still while that peer is away (it would meet the entries when it comes
// back); once it is back upgraded, msgpack; a peer restarted replays its
// log of both encodings to the same state; an older peer back makes the
// leader write JSON again, until it is removed from the cluster.
func TestEntryEncodingOnceEveryPeerReadsIt(t *testing.T) {
	var p3Old atomic.Bool
	p3Old.Store(true)
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(cfg *cluster.Config) {
		if cfg.Name == "p3" && p3Old.Load() {
			cfg.Settings = map[string]string{"fsm_enc": fsm.KnownEncodingsBefore}
		}
	}})
	h.Leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	// write commits a flavor through peer via and returns the encoding
	// of its entry in via's log.
	write := func(via *clustertest.Peer) fsm.Encoding {
		t.Helper()
		n++
		idx, err := via.Node.Propose(ctx, flavor(fmt.Sprintf("f%d", n)))
		if err != nil {
			t.Fatalf("write through %s: %v", via.Name, err)
		}
		e, err := via.Node.LogEncoding(idx)
		if err != nil {
			t.Fatalf("entry %d on %s: %v", idx, via.Name, err)
		}
		return e
	}
	every := func(want fsm.Encoding) func() error {
		return func() error {
			for _, p := range h.Running() {
				if got := write(p); got != want {
					return fmt.Errorf("an entry written through %s is in %s, want %s", p.Name, got, want)
				}
			}
			return nil
		}
	}

	if err := every(fsm.EncodingJSON)(); err != nil {
		t.Fatalf("with an older peer alive: %v", err)
	}

	h.Kill("p3")
	awaitStatus(t, h, "p3", cluster.MemberDead)
	if err := every(fsm.EncodingJSON)(); err != nil {
		t.Fatalf("with an older peer away: %v", err)
	}

	p3Old.Store(false)
	h.Restart("p3")
	testkit.Eventually(t, 30*time.Second, every(fsm.EncodingMsgpack)) // p3 among them: forwarded in msgpack
	replicasAgree(t, h)

	// p2 replays its log, JSON entries then msgpack ones, from its data dir.
	h.Kill("p2")
	h.Restart("p2")
	testkit.Eventually(t, 30*time.Second, every(fsm.EncodingMsgpack))
	replicasAgree(t, h)

	// A peer that comes back older: JSON again while it is alive.
	h.Kill("p3")
	p3Old.Store(true)
	h.Restart("p3")
	testkit.Eventually(t, 30*time.Second, every(fsm.EncodingJSON))
	replicasAgree(t, h)

	// Removed from the cluster, it no longer counts.
	h.Kill("p3")
	awaitStatus(t, h, "p3", cluster.MemberDead)
	if err := h.Leader(10*time.Second).Node.RemovePeer(ctx, "p3"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, every(fsm.EncodingMsgpack))
}

// awaitStatus waits until every running peer's gossip shows name so.
func awaitStatus(t *testing.T, h *clustertest.Harness, name, status string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, p := range h.Running() {
			for _, m := range p.Node.Members() {
				if m.Name == name && m.Status != status {
					return fmt.Errorf("%s sees %s %s, want %s", p.Name, name, m.Status, status)
				}
			}
		}
		return nil
	})
}

// replicasAgree waits until every running peer has applied the leader's
// latest entry and checks that their states are identical.
func replicasAgree(t *testing.T, h *clustertest.Harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idx, err := h.Leader(10*time.Second).Node.Propose(ctx, &fsm.Noop{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.Running() {
		if err := p.Node.Store().WaitApplied(ctx, idx); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
	// The leader's own entries may follow: compare at rest.
	testkit.Eventually(t, 10*time.Second, func() error {
		var want string
		var at uint64
		for _, p := range h.Running() {
			d, a := p.Node.Store().Digest(), p.Node.Store().AppliedIndex()
			if want == "" {
				want, at = d, a
				continue
			}
			if a != at || d != want {
				return fmt.Errorf("%s at index %d has state %s, another peer at %d has %s", p.Name, a, d, at, want)
			}
		}
		return nil
	})
}
