package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/corral-dev/corral/testkit"
)

// A peer whose gossip goes through a cut (Config.GossipCut, as the
// in-process harness runs peers) binds a free port when GossipPort is 0,
// advertises the port it bound, and another peer joins it there.
func TestGossipPortZeroThroughACut(t *testing.T) {
	start := func(name string, join ...string) *Node {
		_, trans := raft.NewInmemTransport(raft.ServerAddress(name))
		n, err := New(Config{Name: name, DataDir: t.TempDir(), BindAddr: "127.0.0.1", APIAddr: name + ".api:1",
			Join: join, BootstrapExpect: 0, Transport: trans, PeerToken: "gossip-port-peer-token-0123",
			GossipCut: func(string) bool { return false }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown() })
		return n
	}
	a := start("a")
	_, port, err := net.SplitHostPort(a.GossipAddr())
	if err != nil || port == "0" {
		t.Fatalf("gossip address %q: %v, want the port bound", a.GossipAddr(), err)
	}
	b := start("b", a.GossipAddr())
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, n := range []*Node{a, b} {
			if len(n.gossip.snapshot()) != 2 {
				return fmt.Errorf("%s sees %d members", n.cfg.Name, len(n.gossip.snapshot()))
			}
		}
		return nil
	})
}
