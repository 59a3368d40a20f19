package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// effects records the side effects Ironic accepted (2xx): provision and
// power targets per node, with the client that sent each.
type effects struct {
	next http.Handler
	mu   sync.Mutex
	log  []effect
}

type effect struct {
	node, kind, target, agent, requestID string
}

func (e *effects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var kind string
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method == http.MethodPut && len(parts) == 5 && parts[0] == "v1" && parts[1] == "nodes" && parts[3] == "states" {
		kind = parts[4] // provision or power
	}
	if kind == "" {
		e.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Target string `json:"target"`
	}
	_ = json.Unmarshal(body, &req)
	rec := &statusRecorder{ResponseWriter: w}
	e.next.ServeHTTP(rec, r)
	if rec.status/100 == 2 {
		e.mu.Lock()
		e.log = append(e.log, effect{node: parts[2], kind: kind, target: req.Target, agent: r.UserAgent(),
			requestID: r.Header.Get("X-OpenStack-Request-Id")})
		e.mu.Unlock()
	}
}

// count returns the accepted requests for node of kind and target, in all
// and per client (User-Agent).
func (e *effects) count(node, kind, target string) (int, map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, by := 0, map[string]int{}
	for _, x := range e.log {
		if x.node == node && x.kind == kind && x.target == target {
			n++
			by[x.agent]++
		}
	}
	return n, by
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// bootOffLeader boots a server until one lands on a host that is not the
// leader (so that cutting its owner off leaves a working majority).
func (w *world) bootOffLeader(flavor string) fsm.Server {
	w.t.Helper()
	leader := w.leader().Name
	for range 10 {
		s := w.waitStatus(w.boot(flavor), fsm.StatusActive)
		if s.Host != leader {
			return s
		}
	}
	w.t.Fatal("every server landed on the leader")
	return fsm.Server{}
}

// waitEffect waits until Ironic accepted one side effect of kind and target
// on node.
func (w *world) waitEffect(ef *effects, node, kind, target string) {
	w.t.Helper()
	testkit.Eventually(w.t, 20*time.Second, func() error {
		if n, _ := ef.count(node, kind, target); n == 0 {
			return fmt.Errorf("Ironic has accepted no %s %q for node %s yet", kind, target, node)
		}
		return nil
	})
}

// waitMoved waits until the leader's log gives the server to another host
// at a higher epoch, with no task left.
func (w *world) waitMoved(s fsm.Server, want fsm.ServerStatus) fsm.Server {
	w.t.Helper()
	var cur fsm.Server
	testkit.Eventually(w.t, 40*time.Second, func() error {
		var err error
		if cur, err = w.leader().Node.Store().Server(s.ID); err != nil {
			return err
		}
		if cur.Host == s.Host || cur.Epoch <= s.Epoch || cur.Status != want || cur.TaskState != "" {
			return fmt.Errorf("server %s is %s/%q on %s at epoch %d", s.ID, cur.Status, cur.TaskState, cur.Host, cur.Epoch)
		}
		return nil
	})
	return cur
}

// partitionedOwner runs one action on a server whose owner is cut off from
// the other peers (Ironic still reachable) right after Ironic accepted the
// action's side effect, keeps it cut off for hold after a survivor has
// finished the action, heals it, and returns the accepted side effects
// of kind and target on the server's node, in all and per client.
func partitionedOwner(t *testing.T, opts sim.Options, action, image, kind, target string, want fsm.ServerStatus, hold time.Duration) (int, map[string]int) {
	ef := &effects{}
	w := newWorldFront(t, 3, opts, func(h http.Handler) http.Handler { ef.next = h; return ef })
	w.sim.SeedNodes(4, "baremetal-gold")
	w.waitMirror(4)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	s := w.bootOffLeader("gold")
	if err := w.propose(&fsm.RequestServerAction{ID: s.ID, Kind: action, ImageRef: image}); err != nil {
		t.Fatal(err)
	}
	w.waitEffect(ef, s.NodeUUID, kind, target)
	w.h.Partition(s.Host)
	got := w.waitMoved(s, want)
	if action == fsm.ActionRebuild && got.ImageRef != image {
		t.Fatalf("rebuilt server has image %q, want %q", got.ImageRef, image)
	}
	// The cut-off owner keeps running: whatever it would repeat, it
	// repeats while it stays cut off.
	observe(hold)
	w.h.Heal(s.Host)
	testkit.Eventually(t, 20*time.Second, func() error {
		if _, err := w.h.Peer(s.Host).Node.Store().Server(s.ID); err != nil {
			return err
		}
		if cur, _ := w.h.Peer(s.Host).Node.Store().Server(s.ID); cur.Epoch != got.Epoch {
			return fmt.Errorf("the healed peer still sees epoch %d", cur.Epoch)
		}
		return nil
	})
	observe(2 * time.Second)
	return ef.count(s.NodeUUID, kind, target)
}

// observe lets time pass so that a side effect that should never happen
// has the chance to: there is no state to wait for.
func observe(d time.Duration) { <-time.After(d) }

// A rebuild whose owner is cut off from the other peers while Ironic
// redeploys reaches Ironic once: the survivor that takes the server over
// finishes it without a second rebuild, and the cut-off owner, whose
// outcome cannot be committed, never sends it again.
func TestPartitionedOwnerRebuildsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster with a partition")
	}
	for _, c := range []struct {
		name   string
		deploy time.Duration
	}{
		{"rebuild outlasts the failover", 3 * time.Second},
		{"rebuild done before the failover", 100 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, by := partitionedOwner(t, sim.Options{DeployDelay: c.deploy}, fsm.ActionRebuild, "http://images.example/v2.qcow2",
				"provision", "rebuild", fsm.StatusActive, 10*time.Second)
			if n != 1 {
				t.Fatalf("one rebuild request became %d rebuild provision requests in Ironic (per client %v)", n, by)
			}
		})
	}
}

// The same for a hard reboot: one power cycle per request.
func TestPartitionedOwnerRebootsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster with a partition")
	}
	for _, c := range []struct {
		name  string
		power time.Duration
	}{
		{"reboot outlasts the failover", 3 * time.Second},
		{"reboot done before the failover", 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, by := partitionedOwner(t, sim.Options{DeployDelay: 50 * time.Millisecond, PowerDelay: c.power}, fsm.ActionRebootHard, "",
				"power", "rebooting", fsm.StatusActive, 10*time.Second)
			if n != 1 {
				t.Fatalf("one hard reboot request became %d power cycles in Ironic (per client %v)", n, by)
			}
		})
	}
}

// An owner restarted while Ironic rebuilds, or after Ironic rebuilt but
// before it could commit the outcome, resumes the action without a second
// rebuild: it finds its own intent in the log and the node's witness
// changed.
func TestRestartedOwnerRebuildsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process cluster")
	}
	for _, c := range []struct {
		name   string
		deploy time.Duration
	}{
		{"restarted while Ironic rebuilds", 2 * time.Second},
		{"restarted after Ironic rebuilt", 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			ef := &effects{}
			var stuck atomic.Bool // the first process never sees its rebuild end
			w := buildWorld(t, 1, sim.Options{DeployDelay: c.deploy},
				func(ir driver.Ironic) driver.Ironic { return &stuckWait{Ironic: ir, stuck: &stuck} },
				driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second}, compute.Config{},
				func(h http.Handler) http.Handler { ef.next = h; return ef })
			w.sim.SeedNodes(1, "baremetal-gold")
			w.waitMirror(1)
			w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
			s := w.waitStatus(w.boot("gold"), fsm.StatusActive)
			stuck.Store(true)
			if err := w.propose(&fsm.RequestServerAction{ID: s.ID, Kind: fsm.ActionRebuild, ImageRef: "http://images.example/v2.qcow2"}); err != nil {
				t.Fatal(err)
			}
			w.waitEffect(ef, s.NodeUUID, "provision", "rebuild")
			if c.deploy < time.Second {
				testkit.Eventually(t, 10*time.Second, func() error {
					if n := w.simNode(s.NodeUUID); n.ProvisionState != "active" {
						return fmt.Errorf("node %s is %s", n.UUID, n.ProvisionState)
					}
					return nil
				})
			}
			stuck.Store(false)
			w.restartDriver(s.Host)
			got := w.waitStatus(s.ID, fsm.StatusActive)
			if got.ImageRef != "http://images.example/v2.qcow2" {
				t.Fatalf("image %q after the rebuild", got.ImageRef)
			}
			if n, by := ef.count(s.NodeUUID, "provision", "rebuild"); n != 1 {
				t.Fatalf("one rebuild request became %d rebuilds in Ironic (per client %v)", n, by)
			}
		})
	}
}

// stuckWait is an Ironic whose provision waits never end while stuck is
// set, as for a process that dies before it sees its rebuild end.
type stuckWait struct {
	driver.Ironic
	stuck *atomic.Bool
}

func (s *stuckWait) WaitProvisionState(ctx context.Context, node, want string) (ironic.Node, error) {
	if s.stuck.Load() {
		<-ctx.Done()
		return ironic.Node{}, ctx.Err()
	}
	return s.Ironic.WaitProvisionState(ctx, node, want)
}
