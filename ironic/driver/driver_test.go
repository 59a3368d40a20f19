package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/cluster/clustertest"
	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/testkit"
)

// world is an in-process cluster whose peers run drivers against one
// simulated Ironic.
type world struct {
	t       *testing.T
	h       *clustertest.Harness
	sim     *sim.Server
	url     string
	drivers map[string]context.CancelFunc // peer → stops its driver and sync
	done    map[string]chan struct{}
	start   func(p *clustertest.Peer) // starts a peer's driver and sync
}

func newWorld(t *testing.T, peers int, reservation string, opts sim.Options) *world {
	t.Helper()
	return newWorldWith(t, peers, reservation, opts, nil)
}

// newWorldWith is newWorld whose drivers reach Ironic through wrap (when
// not nil), which may watch or perturb their calls.
func newWorldWith(t *testing.T, peers int, reservation string, opts sim.Options, wrap func(driver.Ironic) driver.Ironic) *world {
	t.Helper()
	return newWorldCfg(t, peers, opts, wrap, driver.Config{Reservation: reservation, DeployTimeout: 20 * time.Second}, compute.Config{})
}

// newWorldCfg is newWorldWith with the driver's and the manager's
// configuration given.
func newWorldCfg(t *testing.T, peers int, opts sim.Options, wrap func(driver.Ironic) driver.Ironic, dcfg driver.Config, ccfg compute.Config) *world {
	t.Helper()
	return buildWorld(t, peers, opts, wrap, dcfg, ccfg, nil)
}

// newWorldFront is newWorld (automatic reservation) whose simulator is
// reached through front, which may watch every request.
func newWorldFront(t *testing.T, peers int, opts sim.Options, front func(http.Handler) http.Handler) *world {
	t.Helper()
	return buildWorld(t, peers, opts, nil, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 20 * time.Second}, compute.Config{}, front)
}

func buildWorld(t *testing.T, peers int, opts sim.Options, wrap func(driver.Ironic) driver.Ironic, dcfg driver.Config, ccfg compute.Config, front func(http.Handler) http.Handler) *world {
	t.Helper()
	s := sim.New(opts)
	var handler http.Handler = s
	if front != nil {
		handler = front(s)
	}
	ts := httptest.NewServer(handler)
	t.Cleanup(func() { ts.Close(); s.Close() })
	w := &world{t: t, sim: s, url: ts.URL, drivers: map[string]context.CancelFunc{}, done: map[string]chan struct{}{}}
	w.h = clustertest.Start(t, peers, clustertest.Options{})
	w.h.Leader(10 * time.Second)
	t.Cleanup(func() {
		for name := range w.drivers {
			w.stopDriver(name)
		}
	})
	w.start = func(p *clustertest.Peer) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		w.drivers[p.Name], w.done[p.Name] = cancel, done
		c, err := ironic.New(ctx, ironic.Options{URL: ts.URL, UserAgent: "corral-host/" + p.Name})
		if err != nil {
			t.Fatal(err)
		}
		var ir driver.Ironic = c
		if wrap != nil {
			ir = wrap(c)
		}
		virt, err := driver.New(dcfg, ir)
		if err != nil {
			t.Fatal(err)
		}
		d, err := compute.New(ccfg, p.Node, virt)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := mirror.New(p.Node, p.Node, c, mirror.Config{Interval: 200 * time.Millisecond, ReapAfter: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(done)
			go ns.Run(ctx)
			d.Run(ctx)
		}()
	}
	for _, p := range w.h.Running() {
		w.start(p)
	}
	return w
}

// restartDriver stops a peer's driver and node sync and starts new ones,
// as a restarted agent process would run them (the peer's node and its
// replica stay).
func (w *world) restartDriver(name string) {
	w.stopDriver(name)
	w.start(w.h.Peer(name))
}

// stopDriver stops a peer's driver and node sync and waits for them.
func (w *world) stopDriver(name string) {
	if cancel, ok := w.drivers[name]; ok {
		cancel()
		<-w.done[name]
		delete(w.drivers, name)
	}
}

// kill stops a peer like SIGKILL would: its driver, then its node.
func (w *world) kill(name string) {
	w.stopDriver(name)
	w.h.Kill(name)
}

func (w *world) leader() *clustertest.Peer { return w.h.Leader(10 * time.Second) }

func (w *world) propose(cmd fsm.Command) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := w.leader().Node.Propose(ctx, cmd)
	return err
}

func (w *world) flavor(id, class string, extra map[string]string) {
	w.t.Helper()
	specs := map[string]string{"resources:" + class: "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	for k, v := range extra {
		specs[k] = v
	}
	f := fsm.Flavor{ID: id, Name: id, VCPUs: 1, RAM: 1, Disk: 10, RxTxFactor: 1, ExtraSpecs: specs}
	if err := w.propose(&fsm.CreateFlavor{Flavor: f}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) boot(flavor string) string {
	w.t.Helper()
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "s-" + id[:8], FlavorID: flavor, ImageRef: "img"}); err != nil {
		w.t.Fatal(err)
	}
	return id
}

func (w *world) waitStatus(id string, want fsm.ServerStatus) fsm.Server {
	w.t.Helper()
	var s fsm.Server
	testkit.Eventually(w.t, 30*time.Second, func() error {
		var err error
		s, err = w.leader().Node.Store().Server(id)
		if err != nil {
			return err
		}
		if s.Status != want || s.TaskState != "" {
			if s.Fault != nil {
				return fmt.Errorf("server %s is %s/%s (fault %+v), want %s", id, s.Status, s.TaskState, *s.Fault, want)
			}
			return fmt.Errorf("server %s is %s/%s, want %s", id, s.Status, s.TaskState, want)
		}
		return nil
	})
	return s
}

func (w *world) waitMirror(n int) {
	testkit.Eventually(w.t, 10*time.Second, func() error {
		if got := len(w.leader().Node.Store().Nodes()); got < n {
			return fmt.Errorf("mirror has %d of %d nodes", got, n)
		}
		return nil
	})
}

func TestDriverBuildsSpreadsAndDeletes(t *testing.T) {
	for _, mode := range []string{driver.ReserveAllocations, driver.ReserveInstanceUUID} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, 3, mode, sim.Options{DeployDelay: 50 * time.Millisecond})
			w.sim.SeedNodes(8, "baremetal-gold")
			w.waitMirror(8)
			w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
			var ids []string
			for range 6 {
				ids = append(ids, w.boot("gold"))
			}
			perHost := map[string]int{}
			nodes := map[string]string{}
			for _, id := range ids {
				s := w.waitStatus(id, fsm.StatusActive)
				perHost[s.Host]++
				if other, dup := nodes[s.NodeUUID]; dup {
					t.Fatalf("node %s holds %s and %s", s.NodeUUID, other, id)
				}
				nodes[s.NodeUUID] = id
			}
			for h, n := range perHost {
				if n != 2 {
					t.Fatalf("servers per host %v, want 2 each", perHost)
				}
				_ = h
			}
			for _, st := range w.sim.Nodes() {
				if id, ok := nodes[st.UUID]; ok && st.InstanceUUID != id {
					t.Fatalf("Ironic node %s has instance %q, corral says %s", st.UUID, st.InstanceUUID, id)
				}
			}
			for _, id := range ids[:3] {
				if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range ids[:3] {
				w.waitStatus(id, fsm.StatusDeleted)
			}
			if got := len(w.leader().Node.Store().Reservations()); got != 3 {
				t.Fatalf("%d reservations after deleting 3 of 6", got)
			}
			testkit.Eventually(t, 10*time.Second, func() error {
				busy := 0
				for _, st := range w.sim.Nodes() {
					if st.InstanceUUID != "" {
						busy++
					}
				}
				if busy != 3 {
					return fmt.Errorf("%d Ironic nodes hold an instance, want 3", busy)
				}
				return nil
			})
		})
	}
}

func TestDriverFailsWithIronicReason(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{})
	w.sim.SeedNodes(2, "baremetal-gold", "CUSTOM_GPU")
	w.waitMirror(2)
	w.flavor("nomatch", "CUSTOM_BAREMETAL_PLATINUM", nil)
	w.flavor("notrait", "CUSTOM_BAREMETAL_GOLD", map[string]string{"trait:CUSTOM_FPGA": "required"})
	s := w.waitStatus(w.boot("nomatch"), fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "No valid host") {
		t.Fatalf("fault %+v", s.Fault)
	}
	s = w.waitStatus(w.boot("notrait"), fsm.StatusError)
	if s.Fault == nil || !strings.Contains(s.Fault.Message, "CUSTOM_FPGA") {
		t.Fatalf("fault should carry Ironic's reason: %+v", s.Fault)
	}
	// ERROR servers can be deleted; nothing stays behind in Ironic.
	if err := w.propose(&fsm.DeleteServer{ID: s.ID}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(s.ID, fsm.StatusDeleted)
}

func TestDriverNoDoubleBooking(t *testing.T) {
	w := newWorld(t, 3, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond})
	w.sim.SeedNodes(5, "baremetal-gold")
	w.waitMirror(5)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	ids := make([]string, 10)
	errs := make(chan error, 10)
	for i := range ids {
		go func(i int) {
			id := uuid.NewString()
			ids[i] = id
			errs <- w.propose(&fsm.CreateServer{ID: id, Name: "c", FlavorID: "gold", ImageRef: "img"})
		}(i)
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	active, failed := 0, 0
	used := map[string]bool{}
	testkit.Eventually(t, 30*time.Second, func() error {
		active, failed = 0, 0
		used = map[string]bool{}
		for _, id := range ids {
			s, _ := w.leader().Node.Store().Server(id)
			switch {
			case s.Status == fsm.StatusActive && s.TaskState == "":
				active++
				if used[s.NodeUUID] {
					t.Fatalf("node %s used twice", s.NodeUUID)
				}
				used[s.NodeUUID] = true
			case s.Status == fsm.StatusError:
				failed++
			}
		}
		if active+failed != len(ids) {
			return fmt.Errorf("%d active, %d error of %d", active, failed, len(ids))
		}
		return nil
	})
	if active != 5 || failed != 5 {
		t.Fatalf("%d active and %d error, want 5 and 5", active, failed)
	}
}

func TestDeleteDuringBuildWins(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{DeployDelay: 500 * time.Millisecond})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := w.boot("gold")
	testkit.Eventually(t, 10*time.Second, func() error {
		s, _ := w.leader().Node.Store().Server(id)
		if s.TaskState != fsm.TaskSpawning {
			return fmt.Errorf("task %q", s.TaskState)
		}
		return nil
	})
	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	testkit.Eventually(t, 10*time.Second, func() error {
		for _, st := range w.sim.Nodes() {
			if st.InstanceUUID != "" || st.ProvisionState != "available" {
				return fmt.Errorf("node %s: %s instance %q", st.UUID, st.ProvisionState, st.InstanceUUID)
			}
		}
		return nil
	})
}

// A host killed while its servers deploy: the leader confirms the death,
// commits a plan, and the new owners finish the deploys, with one
// allocation each and the same nodes. The simulator holds the deploys
// until the new owners have the servers, so that they are mid-deploy
// however long the boots, the death and the plan take.
func TestFailoverMidDeploy(t *testing.T) {
	w := newWorldCfg(t, 3, sim.Options{}, nil, driver.Config{Reservation: driver.ReserveAuto, DeployTimeout: 5 * time.Minute}, compute.Config{})
	w.sim.HoldDeploys()
	w.sim.SeedNodes(6, "baremetal-gold")
	w.waitMirror(6)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	var ids []string
	for range 6 {
		ids = append(ids, w.boot("gold"))
	}
	leader := w.leader().Name
	var victim string
	var victims []string
	testkit.Eventually(t, 10*time.Second, func() error {
		victims = nil
		for _, id := range ids {
			s, _ := w.leader().Node.Store().Server(id)
			if s.Host != leader && victim == "" {
				victim = s.Host
			}
			if s.Host == victim {
				if s.TaskState != fsm.TaskSpawning {
					return fmt.Errorf("server %s on %s is %s/%s, not yet deploying", id, s.Host, s.Status, s.TaskState)
				}
				victims = append(victims, id)
			}
		}
		if len(victims) == 0 {
			return fmt.Errorf("no server on a follower yet")
		}
		return nil
	})
	nodes := map[string]string{}
	for _, id := range victims {
		s, _ := w.leader().Node.Store().Server(id)
		nodes[id] = s.NodeUUID
	}
	w.kill(victim)
	testkit.Eventually(t, 30*time.Second, func() error {
		for _, id := range victims {
			if s, _ := w.leader().Node.Store().Server(id); s.Host == victim {
				return fmt.Errorf("server %s is still on %s", id, victim)
			}
		}
		return nil
	})
	w.sim.ReleaseDeploys()
	for _, id := range victims {
		s := w.waitStatus(id, fsm.StatusActive)
		if s.Host == victim || s.Epoch != 2 || s.NodeUUID != nodes[id] {
			t.Fatalf("after failover: host %s epoch %d node %s (was %s)", s.Host, s.Epoch, s.NodeUUID, nodes[id])
		}
	}
	allocs := map[string]int{}
	for _, st := range w.sim.Nodes() {
		if st.AllocationUUID != "" {
			allocs[st.InstanceUUID]++
		}
	}
	for _, id := range ids {
		w.waitStatus(id, fsm.StatusActive)
		if allocs[id] != 1 {
			t.Fatalf("server %s has %d allocations in Ironic", id, allocs[id])
		}
	}
	h, _ := w.leader().Node.Store().Host(victim)
	if h.Status != fsm.HostDown {
		t.Fatalf("victim host is %s", h.Status)
	}
}

func TestDriverAttachesAndDetachesVIFs(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := uuid.NewString()
	nets := []fsm.Network{{UUID: "net-a"}, {UUID: "net-b", Port: "port-b"}}
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "v", FlavorID: "gold", ImageRef: "img", Networks: nets}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	want := s.VIFs()
	if len(want) != 2 || want[1] != "port-b" {
		t.Fatalf("VIFs %v", want)
	}
	node := w.sim.Nodes()[0]
	if fmt.Sprint(node.VIFs) != fmt.Sprint(want) {
		t.Fatalf("node VIFs %v, want %v", node.VIFs, want)
	}
	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	if v := w.sim.Nodes()[0].VIFs; len(v) != 0 {
		t.Fatalf("VIFs left after delete: %v", v)
	}
}

// An allocation a fenced owner creates after the server was deleted (it
// was paused mid-request) is removed by the leader's sync.
func TestLeaderReapsLeftoversOfDeletedServers(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{})
	w.sim.SeedNodes(2, "baremetal-gold")
	w.waitMirror(2)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	id := w.boot("gold")
	w.waitStatus(id, fsm.StatusActive)
	if err := w.propose(&fsm.DeleteServer{ID: id}); err != nil {
		t.Fatal(err)
	}
	w.waitStatus(id, fsm.StatusDeleted)
	c, err := ironic.New(context.Background(), ironic.Options{URL: w.url})
	if err != nil {
		t.Fatal(err)
	}
	late, err := c.CreateAllocation(context.Background(), ironic.AllocationRequest{UUID: id, Name: ironic.AllocationName(id), ResourceClass: "baremetal-gold"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitAllocation(context.Background(), late.UUID); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 15*time.Second, func() error {
		for _, st := range w.sim.Nodes() {
			if st.AllocationUUID != "" || st.InstanceUUID != "" {
				return fmt.Errorf("node %s still holds %s", st.UUID, st.InstanceUUID)
			}
		}
		return nil
	})
}
