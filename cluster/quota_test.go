package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// [quota] takes effect in the replicated state once every live peer is
// configured with it: while p3 has other limits nothing is recorded; with
// p3 dead the others' limits are, on every peer; p3 back with its own
// limits changes nothing, and catches up with the recorded ones.
func TestQuotaDefaultsRecordedWhenThePeersAgree(t *testing.T) {
	mine := fsm.NovaQuotaDefaults()
	mine[fsm.QuotaInstances] = 40
	other := fsm.NovaQuotaDefaults()
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(cfg *cluster.Config) {
		cfg.QuotaDefaults = mine
		if cfg.Name == "p3" {
			cfg.QuotaDefaults = other
		}
	}})
	leader := h.Leader(10 * time.Second)
	testkit.Eventually(t, 10*time.Second, func() error {
		if _, ok := leader.Node.AgreedSetting("", "quota"); ok {
			return fmt.Errorf("%s: the peers agree on [quota] though p3 differs", leader.Name)
		}
		return nil
	})
	if got := leader.Node.Store().QuotaDefaults(); len(got) != 0 {
		t.Fatalf("recorded %v while the peers differ", got)
	}
	h.Kill("p3")
	recorded := func(peers ...*clustertest.Peer) func() error {
		return func() error {
			for _, p := range peers {
				if got := p.Node.Store().QuotaDefaults(); got.String() != mine.String() {
					return fmt.Errorf("%s: recorded [quota] %v, want %v", p.Name, got, mine)
				}
				if got := p.Node.Store().DefaultQuotas()[fsm.QuotaInstances]; got != 40 {
					return fmt.Errorf("%s: default instances %d, want 40", p.Name, got)
				}
			}
			return nil
		}
	}
	testkit.Eventually(t, 15*time.Second, recorded(h.Running()...))
	h.Restart("p3")
	testkit.Eventually(t, 15*time.Second, recorded(h.Peer("p3")))
	if got := h.Leader(10 * time.Second).Node.Store().QuotaDefaults(); got.String() != mine.String() {
		t.Fatalf("p3's [quota] replaced the recorded limits: %v", got)
	}
}
