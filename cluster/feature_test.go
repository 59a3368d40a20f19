package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// Once every peer advertises the commands of a feature, the leader
// enables it, and every replica has it on.
func TestLeaderEnablesFeaturesEveryPeerKnows(t *testing.T) {
	h := clustertest.Start(t, 3, clustertest.Options{})
	h.Leader(10 * time.Second)
	for _, p := range h.Running() {
		testkit.Eventually(t, 20*time.Second, func() error {
			for name := range fsm.FeatureCommands {
				if !p.Node.Store().FeatureEnabled(name) {
					return fmt.Errorf("%s: feature %s is off", p.Name, name)
				}
			}
			return nil
		})
	}
}
