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

// A setting of the Ironic driver is agreed among the ironic hosts only:
// in a mixed cloud the hypervisor hosts advertise the driver's default,
// which must not veto what every ironic host is configured with.
func TestAgreedSettingAmongHostsOfOneKind(t *testing.T) {
	const key = "legacy_inventory"
	h := clustertest.Start(t, 3, clustertest.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Settings = map[string]string{key: "true"}
		if cfg.Name == "p3" {
			cfg.Kind = fsm.KindHypervisor
			cfg.Settings = map[string]string{key: "false"}
		}
	}})
	h.Leader(10 * time.Second)
	for _, p := range h.Running() {
		testkit.Eventually(t, 10*time.Second, func() error {
			if v, ok := p.Node.AgreedSetting(fsm.KindIronic, key); !ok || v != "true" {
				return fmt.Errorf("%s: ironic hosts agree on %q %v, want true", p.Name, v, ok)
			}
			if v, ok := p.Node.AgreedSetting(fsm.KindHypervisor, key); !ok || v != "false" {
				return fmt.Errorf("%s: hypervisor hosts agree on %q %v, want false", p.Name, v, ok)
			}
			return nil
		})
		// Across kinds the hosts differ: no agreement.
		if v, ok := p.Node.AgreedSetting("", key); ok {
			t.Fatalf("%s: every host agrees on %q in a mixed cloud", p.Name, v)
		}
	}
	// A dead ironic host takes no part: the live ones still agree.
	h.Kill("p2")
	testkit.Eventually(t, 10*time.Second, func() error {
		p := h.Peer("p1")
		if v, ok := p.Node.AgreedSetting(fsm.KindIronic, key); !ok || v != "true" {
			return fmt.Errorf("after p2 died: %q %v, want true (the live ironic hosts agree)", v, ok)
		}
		return nil
	})
}
