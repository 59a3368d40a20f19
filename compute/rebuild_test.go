package compute_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// kinds records the kinds of the actions a driver is asked to carry out.
type kinds struct {
	mu  sync.Mutex
	got []string
}

func (k *kinds) act(_ context.Context, _ *compute.Handle, s fsm.Server) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.got = append(k.got, s.Action.Kind)
	return nil
}

func (k *kinds) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.got)
}

// committed reports whether c committed a command of type t.
func (c *oneHost) committed(t fsm.CommandType) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.cmds, func(cmd fsm.Command) bool { return cmd.Type() == t })
}

// A rebuild of a stopped server ends SHUTOFF, as Nova's: once the driver
// redeployed it, the owner commits StopAfterRebuild and the driver
// powers it off like a stop.
func TestRebuildOfAStoppedServerEndsStopped(t *testing.T) {
	c := withStoppedRebuild(t)
	var k kinds
	run(t, c, 0, k.act)
	waitFor(t, "the rebuild done", 10*time.Second, func() bool { return mustServer(t, c).TaskState == "" })
	s := mustServer(t, c)
	if s.Status != fsm.StatusShutoff || s.ImageRef != "img-3" || s.TaskState != "" || s.Action != nil {
		t.Fatalf("after the rebuild: %+v", s)
	}
	if got := k.list(); !slices.Equal(got, []string{fsm.ActionRebuild, fsm.ActionRebuildStop}) {
		t.Fatalf("the driver carried out %v, want the rebuild then its stop", got)
	}
	if !c.committed(fsm.CmdStopAfterRebuild) {
		t.Fatal("no StopAfterRebuild committed")
	}
}

// Until every peer knows StopAfterRebuild, such a rebuild ends ACTIVE, as
// it did before.
func TestRebuildOfAStoppedServerWaitsForEveryPeer(t *testing.T) {
	c := withStoppedRebuild(t)
	c.unknown = map[fsm.CommandType]bool{fsm.CmdStopAfterRebuild: true}
	var k kinds
	run(t, c, 0, k.act)
	s := waitStatus(t, c, serverID, fsm.StatusActive)
	if s.ImageRef != "img-3" || s.TaskState != "" {
		t.Fatalf("after the rebuild: %+v", s)
	}
	if got := k.list(); !slices.Equal(got, []string{fsm.ActionRebuild}) || c.committed(fsm.CmdStopAfterRebuild) {
		t.Fatalf("the driver carried out %v; StopAfterRebuild committed: %t", got, c.committed(fsm.CmdStopAfterRebuild))
	}
}
