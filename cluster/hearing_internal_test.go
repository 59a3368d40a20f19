package cluster

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// The packet log keeps only the addresses it watches: a stranger's
// packets cost nothing, and an address no longer watched is forgotten.
func TestPacketLogKeepsWatchedAddresses(t *testing.T) {
	l := newPacketLog()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	l.saw("10.0.0.2:7482", t0)
	if at := l.lastFrom("10.0.0.2:7482"); !at.IsZero() {
		t.Fatalf("an address not watched was kept: %s", at)
	}
	l.watchOnly([]string{"10.0.0.2:7482", "10.0.0.3:7482"})
	l.saw("10.0.0.2:7482", t0.Add(time.Second))
	l.saw("10.0.0.2:7482", t0) // an older packet does not move it back
	l.saw("10.0.0.3:7482", t0)
	l.saw("10.0.0.9:7482", t0)
	if at := l.lastFrom("10.0.0.2:7482"); !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("last packet from 10.0.0.2 at %s, want %s", at, t0.Add(time.Second))
	}
	if at := l.lastFrom("10.0.0.9:7482"); !at.IsZero() {
		t.Fatalf("a stranger's packet was kept: %s", at)
	}
	l.watchOnly([]string{"10.0.0.2:7482"})
	if at := l.lastFrom("10.0.0.3:7482"); !at.IsZero() {
		t.Fatalf("an address no longer watched is still kept: %s", at)
	}
}

// What the judge is told the leader heard: the latest of an answer to its
// ping and a packet from the host's gossip address; nothing when it does
// not listen.
func TestHearingSnapshotTakesTheLatestSign(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var off *hearing
	if since, heard := off.snapshot(nil, newPacketLog()); !since.IsZero() || heard != nil {
		t.Fatalf("a leader that does not listen reported %s, %v", since, heard)
	}
	h := newHearing(t0)
	h.answered("p2", t0.Add(time.Second))
	h.answered("p3", t0.Add(time.Second))
	h.answered("p3", t0) // an older answer does not move it back
	l := newPacketLog()
	l.watchOnly([]string{"p2:7482", "p3:7482", "p4:7482"})
	l.saw("p2:7482", t0.Add(2*time.Second)) // a late answer, or the host's own gossip
	l.saw("p3:7482", t0.Add(500*time.Millisecond))
	l.saw("p4:7482", t0.Add(3*time.Second))
	hosts := []fsm.Host{{Name: "p2", GossipAddr: "p2:7482"}, {Name: "p3", GossipAddr: "p3:7482"},
		{Name: "p4", GossipAddr: "p4:7482"}, {Name: "p5"}}
	since, heard := h.snapshot(hosts, l)
	want := map[string]time.Time{"p2": t0.Add(2 * time.Second), "p3": t0.Add(time.Second), "p4": t0.Add(3 * time.Second)}
	if !since.Equal(t0) || fmt.Sprint(heard) != fmt.Sprint(want) {
		t.Fatalf("heard since %s: %v, want since %s: %v", since, heard, t0, want)
	}
}

// Two gossip members on loopback: each one's transport notes the other's
// packets once it watches its address, and a ping straight to a member
// is answered while it runs, not once it has stopped.
func TestGossipHearsItsPeer(t *testing.T) {
	start := func(name string) *gossip {
		cfg := &Config{Name: name, BindAddr: "127.0.0.1", Gossip: DefaultGossipTimings()}
		g, err := newGossip(cfg, memberMeta{Version: 1}, nil, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := start("a"), start("b")
	defer a.shutdown()
	stopped := false
	defer func() {
		if !stopped {
			_ = b.shutdown()
		}
	}()
	a.heard.watchOnly([]string{b.Addr()})
	if _, err := a.join([]string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() error {
		if a.heard.lastFrom(b.Addr()).IsZero() {
			return fmt.Errorf("no packet from %s noted yet", b.Addr())
		}
		if !a.ping("b", b.Addr()) {
			return fmt.Errorf("ping to %s unanswered", b.Addr())
		}
		return nil
	})
	if err := b.shutdown(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if a.ping("b", b.Addr()) {
		t.Fatal("a stopped member answered a ping")
	}
}
