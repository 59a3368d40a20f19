package main

import (
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
