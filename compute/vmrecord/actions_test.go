package vmrecord_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/compute/vmrecord"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// hv is a one-host cluster, hypervisor "hv", whose log is a local store.
type hv struct {
	mu    sync.Mutex
	idx   uint64
	store *fsm.Store
}

func (c *hv) Name() string      { return "hv" }
func (c *hv) Store() *fsm.Store { return c.store }
func (c *hv) IsLeader() bool    { return true }

func (c *hv) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idx++
	if cmd.Header().At.IsZero() {
		cmd.Header().At = time.Date(2026, 12, 1, 0, 0, int(c.idx), 0, time.UTC)
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	return c.idx, c.store.Apply(c.idx, data).Err
}

func (c *hv) must(t *testing.T, cmd fsm.Command) {
	t.Helper()
	if _, err := c.Propose(context.Background(), cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
}

// A VM rebuilt while stopped ends off and SHUTOFF, its new image
// recorded, as Nova stops it again after the rebuild.
func TestRebuildOfAStoppedVM(t *testing.T) {
	c := &hv{store: fsm.New()}
	c.must(t, &fsm.RegisterHost{Name: "hv", RaftAddr: "127.0.0.2:1", APIAddr: "127.0.0.2:2", Kind: fsm.KindHypervisor})
	c.must(t, &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f1", Name: "m1", VCPUs: 1, RAM: 512, Disk: 1, RxTxFactor: 1}})
	const id = "10000000-0000-4000-9000-000000000001"
	c.must(t, &fsm.CreateServer{ID: id, Name: "vm-1", FlavorID: "f1", ImageRef: "img-1", Host: "hv"})

	d := vmrecord.New(vmrecord.Config{})
	m, err := compute.New(compute.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, c, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	settled := func(want fsm.ServerStatus) fsm.Server {
		t.Helper()
		var s fsm.Server
		testkit.Eventually(t, 10*time.Second, testkit.Holds("server "+string(want), func() bool {
			s, _ = c.store.Server(id)
			return s.Status == want && s.TaskState == ""
		}))
		return s
	}
	s := settled(fsm.StatusActive)
	c.must(t, &fsm.RequestServerAction{ID: id, Kind: fsm.ActionStop})
	settled(fsm.StatusShutoff)
	c.must(t, &fsm.RequestServerAction{ID: id, Kind: fsm.ActionRebuild, ImageRef: "img-2"})
	testkit.Eventually(t, 10*time.Second, testkit.Holds("the rebuild done", func() bool {
		s, _ = c.store.Server(id)
		return s.TaskState == ""
	}))
	vms := d.VMs()
	if s.Status != fsm.StatusShutoff || s.ImageRef != "img-2" || len(vms) != 1 || !vms[0].Off || vms[0].Image != "img-2" {
		t.Fatalf("after the rebuild of a stopped VM: server %s on %s, VMs %+v", s.Status, s.ImageRef, vms)
	}
}
