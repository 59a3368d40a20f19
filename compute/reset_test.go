package compute_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// An admin's reset during a rebuild: the owner's driver finishes its
// work, its outcome is refused as stale and the worker stops with the
// server as the admin set it; a rebuild asked afterwards is carried out.
func TestResetDuringAnActionKeepsTheAdminsState(t *testing.T) {
	c := withRebuild(t)
	first := mustServer(t, c).Action.RequestedAt
	var acts calls
	var mu sync.Mutex
	var images []string
	acting, release := make(chan struct{}), make(chan struct{})
	start(t, c, compute.Config{}, &script{act: func(ctx context.Context, _ *compute.Handle, s fsm.Server) error {
		mu.Lock()
		images = append(images, s.Action.ImageRef)
		mu.Unlock()
		if acts.add(ctx, s) == 1 {
			close(acting)
			<-release
		}
		return nil
	}})
	<-acting
	c.must(t, &fsm.ResetServerState{ID: serverID, Status: fsm.StatusError})
	close(release)
	refused := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cmd := range c.cmds {
			if f, ok := cmd.(*fsm.FinishServerAction); ok && f.RequestedAt.Equal(first) {
				return true
			}
		}
		return false
	}
	waitFor(t, "the owner's outcome of the dropped rebuild", 10*time.Second, refused)
	if s := mustServer(t, c); s.Status != fsm.StatusError || s.TaskState != "" || s.Action != nil || s.ImageRef != "img-2" {
		t.Fatalf("after the stale outcome: %+v", s)
	}

	c.must(t, &fsm.RequestServerAction{ID: serverID, Kind: fsm.ActionRebuild, ImageRef: "img-3"})
	s := waitStatus(t, c, serverID, fsm.StatusActive)
	mu.Lock()
	defer mu.Unlock()
	if s.ImageRef != "img-3" || s.Action != nil || len(images) != 2 || images[0] != "img-2" || images[1] != "img-3" {
		t.Fatalf("rebuilt from ERROR: %+v after rebuilds to %v", s, images)
	}
}
