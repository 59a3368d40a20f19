package compute_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
)

// failing is a driver whose builds end in a PermanentError (or run past
// BuildTimeout) and that gives back what a failed build held through
// BuildFailed, which answers with give.
type failing struct {
	script
	give  func(s fsm.Server) error
	calls calls
	seen  chan fsm.ServerStatus // the server's status when BuildFailed ran
}

func (d *failing) BuildFailed(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	d.calls.add(ctx, s)
	cur, _ := h.Store().Server(s.ID)
	select {
	case d.seen <- cur.Status:
	default:
	}
	return d.give(s)
}

func newFailing(give func(fsm.Server) error, build step) *failing {
	d := &failing{give: give, seen: make(chan fsm.ServerStatus, 8)}
	d.build = build
	return d
}

func permanent(context.Context, *compute.Handle, fsm.Server) error {
	return compute.Permanent("Ironic refused to deploy")
}

// A build that ends in ERROR first gives back what it held (BuildFailed,
// as Nova's compute manager deallocates a failed build's networks before
// it sets ERROR); that it could not is logged and the build still ends
// in ERROR; a refused intent in it stops the worker without ERROR, and
// the next worker fails the build again. The same holds for a build that
// times out.
func TestFailedBuildGivesBackWhatItHeld(t *testing.T) {
	t.Run("given back, then ERROR", func(t *testing.T) {
		c := twoHosts(t)
		d := newFailing(func(fsm.Server) error { return nil }, permanent)
		start(t, c, compute.Config{}, d)
		c.create(t, serverID, "h1")
		s := waitStatus(t, c, serverID, fsm.StatusError)
		if s.Fault == nil || s.Fault.Message != "Ironic refused to deploy" {
			t.Fatalf("fault %+v", s.Fault)
		}
		if n := d.calls.n(); n != 1 {
			t.Fatalf("BuildFailed ran %d times, want once", n)
		}
		if st := <-d.seen; st != fsm.StatusBuild {
			t.Fatalf("BuildFailed ran with the server %s, want before ERROR", st)
		}
	})
	t.Run("not given back, still ERROR", func(t *testing.T) {
		c := twoHosts(t)
		d := newFailing(func(fsm.Server) error { return errors.New("Neutron unavailable") }, permanent)
		start(t, c, compute.Config{}, d)
		c.create(t, serverID, "h1")
		if s := waitStatus(t, c, serverID, fsm.StatusError); s.Fault == nil || s.Fault.Message != "Ironic refused to deploy" {
			t.Fatalf("fault %+v", s.Fault)
		}
	})
	t.Run("a refused intent", func(t *testing.T) {
		c := twoHosts(t)
		refused := 2
		d := newFailing(func(fsm.Server) error {
			if refused > 0 {
				refused--
				return fmt.Errorf("%w: not at this epoch", compute.ErrIntent)
			}
			return nil
		}, permanent)
		start(t, c, compute.Config{}, d)
		c.create(t, serverID, "h1")
		waitStatus(t, c, serverID, fsm.StatusError)
		if n := d.calls.n(); n != 3 {
			t.Fatalf("BuildFailed ran %d times, want 3 (two refused, by as many workers)", n)
		}
		for i := 0; i < 3; i++ {
			if st := <-d.seen; st != fsm.StatusBuild {
				t.Fatalf("BuildFailed %d ran with the server %s, want BUILD", i+1, st)
			}
		}
	})
	t.Run("timed out", func(t *testing.T) {
		c := twoHosts(t)
		d := newFailing(func(fsm.Server) error { return nil }, func(context.Context, *compute.Handle, fsm.Server) error {
			return errors.New("no node matches")
		})
		start(t, c, compute.Config{BuildTimeout: 200 * time.Millisecond}, d)
		c.create(t, serverID, "h1")
		waitStatus(t, c, serverID, fsm.StatusError)
		if n := d.calls.n(); n != 1 {
			t.Fatalf("BuildFailed ran %d times, want once", n)
		}
	})
}
