package upgraderolling

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/corral-dev/corral/e2e"
)

// workload boots, deletes and acts on servers through whichever peers are
// running, and remembers what was acknowledged.
type workload struct {
	t      *testing.T
	c      *e2e.Cluster
	flavor string
	rng    *rand.Rand

	mu      sync.Mutex
	live    []string          // acknowledged boots not deleted, oldest first
	deleted []string          // acknowledged deletes
	expect  map[string]string // server → the status its last acknowledged action leads to
	unsure  map[string]bool   // servers with a request whose outcome is unknown
	acked   map[string]int    // acknowledged requests by kind
	failed  map[string]int    // refused or unanswered requests by kind
	seq     int

	stop chan struct{}
	done chan struct{}
}

func newWorkload(t *testing.T, c *e2e.Cluster, flavor string, initial []string) *workload {
	w := &workload{t: t, c: c, flavor: flavor, rng: rand.New(rand.NewPCG(1, 2)), live: slices.Clone(initial),
		expect: map[string]string{}, unsure: map[string]bool{}, acked: map[string]int{}, failed: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, id := range initial {
		w.expect[id] = "ACTIVE"
	}
	return w
}

// run sends one request every 300 ms, for at most 10 minutes, until halt.
func (w *workload) run() {
	defer close(w.done)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Minute)
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		case <-deadline:
			return
		case <-tick.C:
		}
		a := w.peer()
		if a == nil {
			continue
		}
		switch {
		case i%4 == 0 && w.count() < 6:
			w.boot(a)
		case i%4 == 2 && w.count() > 3:
			w.remove(a)
		default:
			w.act(a)
		}
	}
}

// halt stops the workload and waits for its last request.
func (w *workload) halt() {
	close(w.stop)
	<-w.done
}

func (w *workload) peer() *e2e.Agent {
	var up []*e2e.Agent
	for _, a := range w.c.Agents {
		if a.Running() {
			up = append(up, a)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[w.rng.IntN(len(up))]
}

func (w *workload) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.live)
}

func ctx10() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (w *workload) boot(a *e2e.Agent) {
	w.mu.Lock()
	w.seq++
	name := fmt.Sprintf("roll-w%d", w.seq)
	w.mu.Unlock()
	ctx, cancel := ctx10()
	defer cancel()
	id, err := e2e.Boot(ctx, e2e.Compute(a), name, w.flavor)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed["boot"]++
		return
	}
	w.acked["boot"]++
	w.live = append(w.live, id)
	w.expect[id] = "ACTIVE"
}

func (w *workload) remove(a *e2e.Agent) {
	w.mu.Lock()
	id := w.live[0]
	w.mu.Unlock()
	ctx, cancel := ctx10()
	defer cancel()
	err := servers.Delete(ctx, e2e.Compute(a), id).ExtractErr()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.acked["delete"]++
		w.live = slices.DeleteFunc(w.live, func(s string) bool { return s == id })
		w.deleted = append(w.deleted, id)
		delete(w.expect, id)
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		w.failed["delete"]++ // refused: nothing changed
	default: // it may or may not be deleted: only the final listing judges it
		w.failed["delete"]++
		w.unsure[id] = true
		w.live = slices.DeleteFunc(w.live, func(s string) bool { return s == id })
	}
}

// act stops an ACTIVE server, or reboots it, or starts a SHUTOFF one;
// a server with a task in progress is left alone.
func (w *workload) act(a *e2e.Agent) {
	w.mu.Lock()
	if len(w.live) == 0 {
		w.mu.Unlock()
		return
	}
	id := w.live[w.rng.IntN(len(w.live))]
	w.mu.Unlock()
	cl := e2e.Compute(a)
	ctx, cancel := ctx10()
	defer cancel()
	s, err := servers.Get(ctx, cl, id).Extract()
	if err != nil || s.TaskState != "" || (s.Status != "ACTIVE" && s.Status != "SHUTOFF") {
		return
	}
	kind, want := "start", "ACTIVE"
	switch {
	case s.Status == "ACTIVE" && w.rng.IntN(2) == 0:
		kind, want = "stop", "SHUTOFF"
		err = servers.Stop(ctx, cl, id).ExtractErr()
	case s.Status == "ACTIVE":
		kind = "reboot"
		err = servers.Reboot(ctx, cl, id, servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr()
	default:
		err = servers.Start(ctx, cl, id).ExtractErr()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.acked[kind]++
		w.expect[id] = want
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		w.failed[kind]++
	default:
		w.failed[kind]++
		w.unsure[id] = true
	}
}
