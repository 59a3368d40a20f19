package main

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

func TestMassBootFlags(t *testing.T) {
	c, err := parseFlags([]string{"-workload", "massboot", "-nemesis", "kill"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes != 150 || c.WaveSize != 200 || c.Waves != 3 || c.OpTimeout != 20*time.Second {
		t.Fatalf("massboot defaults: %+v", c)
	}
	c, err = parseFlags([]string{"-workload", "massboot", "-nodes", "30", "-wave-size", "40"})
	if err != nil || c.Nodes != 30 || c.WaveSize != 40 {
		t.Fatalf("explicit flags lost: %v %+v", err, c)
	}
	if c, err = parseFlags(nil); err != nil || c.Workload != history.WorkloadMixed || c.Nodes != 48 {
		t.Fatalf("default workload changed: %v %+v", err, c)
	}
	if _, err := parseFlags([]string{"-workload", "bulk"}); err == nil {
		t.Fatal("an unknown workload was accepted")
	}
}

// -neutron needs -keystone, and the simulator.
func TestNeutronFlags(t *testing.T) {
	c, err := parseFlags([]string{"-keystone", "-neutron", "-neutron-env", "/x/neutron.env"})
	if err != nil || !c.Neutron || c.NeutronEnv != "/x/neutron.env" || c.UserPorts != 12 || c.ReapGrace != time.Minute ||
		c.Clients != 4 || c.BootEvery != 5*time.Second || c.MaxBusy != 3 || c.OpTimeout != 15*time.Second {
		t.Fatalf("-keystone -neutron: %v %+v", err, c)
	}
	if c, err := parseFlags([]string{"-keystone", "-neutron", "-clients", "10", "-op-timeout", "5s"}); err != nil || c.Clients != 10 || c.OpTimeout != 5*time.Second {
		t.Fatalf("explicit flags lost: %v %+v", err, c)
	}
	if _, err := parseFlags([]string{"-keystone", "-neutron", "-workload", "massboot"}); err == nil {
		t.Fatal("-neutron with the mass boot was accepted")
	}
	if _, err := parseFlags([]string{"-neutron"}); err == nil || !strings.Contains(err.Error(), "-keystone") {
		t.Fatalf("-neutron alone: %v, want an error naming -keystone", err)
	}
	if _, err := parseFlags([]string{"-keystone", "-neutron", "-ironic-url", "http://127.0.0.1:6385"}); err == nil ||
		!strings.Contains(err.Error(), "simulator") {
		t.Fatalf("-neutron with a real Ironic: %v, want an error", err)
	}
}

// -old-bin upgrades the last agent at half the run by default; an
// -upgrade-at that leaves no room for the upgrade, or without -old-bin,
// is refused.
func TestUpgradeFlags(t *testing.T) {
	c, err := parseFlags([]string{"-old-bin", "/x/corral-old", "-duration", "120s"})
	if err != nil || c.OldBin != "/x/corral-old" || c.UpgradeAt != 60*time.Second {
		t.Fatalf("-old-bin: %v %+v", err, c)
	}
	if c, err := parseFlags([]string{"-old-bin", "/x/corral-old", "-duration", "120s", "-upgrade-at", "20s"}); err != nil || c.UpgradeAt != 20*time.Second {
		t.Fatalf("-upgrade-at: %v %+v", err, c)
	}
	for _, args := range [][]string{
		{"-old-bin", "/x/corral-old", "-duration", "120s", "-upgrade-at", "100s"},
		{"-upgrade-at", "20s"},
		{"-old-bin", "/x/corral-old", "-workload", "massboot"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
