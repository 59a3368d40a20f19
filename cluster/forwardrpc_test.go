package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/testkit"
)

// metricSum sums the samples of a counter that carry every label value
// in values.
func metricSum(t *testing.T, p *clustertest.Peer, name string, values ...string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	sample:
		for _, m := range mf.GetMetric() {
			for _, v := range values {
				if !hasLabel(m, v) {
					continue sample
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// A cluster that mixes a peer without forwarding's RPC (a peer of an
// older version: p3) with peers that speak it, over the network as
// separate processes talk: every follower forwards its writes and
// linearizable reads, over the RPC to a leader that serves it and over
// HTTP otherwise, under a leader of either kind.
func TestForwardingInAMixedCluster(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{Network: true, Tweak: func(cfg *cluster.Config) {
		cfg.NoForwardRPC = cfg.Name == "p3"
	}})
	for _, m := range []string{"p1", "p2", "p3"} {
		seenAlive(t, h, m) // and their metadata: who serves the RPC
	}
	round := func(name string) *clustertest.Peer {
		leader := h.Leader(20 * time.Second)
		t.Logf("%s round: leader %s", name, leader.Name)
		for _, f := range h.Followers(leader) {
			viaRPC := f.Name != "p3" && leader.Name != "p3"
			rpcBefore := metricSum(t, f, "corral_forward_rpc_requests_total", "ok")
			servedBefore := metricSum(t, leader, "corral_forward_rpc_served_total", "ok")
			writesBefore := metricSum(t, f, "corral_forwarded_writes_total", "ok")
			id := fmt.Sprintf("%s-%s", name, f.Name)
			if _, err := f.Node.Propose(ctxT(t, 10*time.Second), flavor(id)); err != nil {
				t.Fatalf("%s: write through %s (leader %s): %v", name, f.Name, leader.Name, err)
			}
			if _, err := f.Node.Store().Flavor(id); err != nil {
				t.Fatalf("%s: %s does not read its own write: %v", name, f.Name, err)
			}
			if err := f.Node.ReadBarrier(ctxT(t, 10*time.Second), cluster.Linearizable); err != nil {
				t.Fatalf("%s: linearizable read on %s: %v", name, f.Name, err)
			}
			if got := metricSum(t, f, "corral_forwarded_writes_total", "ok") - writesBefore; got != 1 {
				t.Errorf("%s: %s forwarded %v writes, want 1", name, f.Name, got)
			}
			want := 0.0
			if viaRPC {
				want = 2 // the write and the read index
			}
			if got := metricSum(t, f, "corral_forward_rpc_requests_total", "ok") - rpcBefore; got != want {
				t.Errorf("%s: %s forwarded %v requests over the RPC to %s, want %v", name, f.Name, got, leader.Name, want)
			}
			if got := metricSum(t, leader, "corral_forward_rpc_served_total", "ok") - servedBefore; got != want {
				t.Errorf("%s: leader %s served %v requests of %s over the RPC, want %v", name, leader.Name, got, f.Name, want)
			}
		}
		return leader
	}
	leader := round("first")
	to := h.Peer("p3")
	if leader == to {
		to = h.Peer("p1")
	}
	testkit.Eventually(t, 20*time.Second, func() error {
		if h.Leader(20*time.Second) == to {
			return nil
		}
		return h.Leader(20*time.Second).Node.TransferLeadership(to.Name, to.RaftAddr())
	})
	round("second")
}
