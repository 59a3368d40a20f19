package main

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/cluster"
)

func TestConfigSilentGraceOff(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"}
	c := mustLoad(t, []string{"--config", writeConfig(t, "[failover]\nsilent_grace = off\n")}, env)
	if c.Failover.SilentGrace >= 0 || c.clusterConfig().SilentGrace >= 0 {
		t.Fatalf("silent_grace = off gave %v, want negative (off)", c.Failover.SilentGrace)
	}
	if d := mustLoad(t, nil, env); d.Failover.SilentGrace != cluster.DefaultSilentGrace {
		t.Fatalf("default silent grace %v, want %v", d.Failover.SilentGrace, cluster.DefaultSilentGrace)
	}
}

// Raft's timings are a second: on two cores shared with other builds,
// under the race detector, 300 ms held six elections in three idle
// minutes of a five-peer cluster and 500 ms one (TestBusyMachineBenchmark,
// docs/failover.md); a second held none. The lease is as long as the
// heartbeat timeout, the longest raft allows.
func TestConfigRaftDefaults(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"})
	got := [3]time.Duration{c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout, c.Raft.LeaderLeaseTimeout}
	if got != [3]time.Duration{time.Second, time.Second, time.Second} {
		t.Fatalf("raft heartbeat, election and lease timeouts %v, want a second each", got)
	}
}

// Gossip's word alone takes a host the leader still hears down only after
// five seconds: a peer starved of CPU flaps in gossip for a second or two
// at a time, and a pause or partition does not wait for it (the leader's
// own silence confirms those).
func TestConfigDownGraceDefault(t *testing.T) {
	c := mustLoad(t, nil, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"})
	if c.Failover.DownGrace != 5*time.Second {
		t.Fatalf("default down grace %v, want 5s", c.Failover.DownGrace)
	}
	if cluster.DefaultDownGrace != c.Failover.DownGrace {
		t.Fatalf("the agent's default down grace %v is not the cluster's %v", c.Failover.DownGrace, cluster.DefaultDownGrace)
	}
}
