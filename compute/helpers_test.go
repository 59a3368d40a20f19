package compute_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/compute"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/testkit"
)

// oneHost is a cluster of one host whose log is a local store: commands
// apply at once, or fail with fail when it is set.
type oneHost struct {
	name  string
	store *fsm.Store
	known bool // every peer knows every command type
	// unknown, when set, names the command types some peer does not know
	// (known must be set too).
	unknown map[fsm.CommandType]bool

	mu   sync.Mutex
	idx  uint64
	fail error
	cmds []fsm.Command
	// then, when set, returns commands to apply right after cmd, in the
	// same call (as if other peers' entries followed it in the log).
	then func(cmd fsm.Command) []fsm.Command
}

func (c *oneHost) Name() string      { return c.name }
func (c *oneHost) Store() *fsm.Store { return c.store }
func (c *oneHost) IsLeader() bool    { return true }

func (c *oneHost) CommandKnown(t fsm.CommandType) bool { return c.known && !c.unknown[t] }

func (c *oneHost) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return 0, c.fail
	}
	idx, err := c.apply(cmd)
	if err == nil && c.then != nil {
		for _, next := range c.then(cmd) {
			if _, err := c.apply(next); err != nil {
				return 0, fmt.Errorf("%T after %T: %w", next, cmd, err)
			}
		}
	}
	return idx, err
}

func (c *oneHost) apply(cmd fsm.Command) (uint64, error) {
	c.idx++
	if cmd.Header().At.IsZero() {
		cmd.Header().At = time.Date(2026, 12, 1, 0, 0, int(c.idx), 0, time.UTC)
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	c.cmds = append(c.cmds, cmd)
	r := c.store.Apply(c.idx, data)
	return c.idx, r.Err
}

func (c *oneHost) must(t *testing.T, cmd fsm.Command) {
	t.Helper()
	if _, err := c.Propose(context.Background(), cmd); err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
}

const serverID = "10000000-0000-4000-9000-000000000001"

// twoHosts returns the cluster of host h1 (whose manager the tests run)
// with a second Ironic host, h2, to move servers to, and a flavor.
func twoHosts(t *testing.T) *oneHost {
	t.Helper()
	c := &oneHost{name: "h1", store: fsm.New(), known: true}
	c.must(t, &fsm.RegisterHost{Name: "h1", RaftAddr: "127.0.0.2:1", APIAddr: "127.0.0.2:2", GossipAddr: "127.0.0.2:3"})
	c.must(t, &fsm.RegisterHost{Name: "h2", RaftAddr: "127.0.0.3:1", APIAddr: "127.0.0.3:2", GossipAddr: "127.0.0.3:3"})
	c.must(t, &fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "f1", Name: "bm", VCPUs: 1, RAM: 1, Disk: 10, RxTxFactor: 1}})
	return c
}

// create commits a new server owned by host at epoch 1, to build.
func (c *oneHost) create(t *testing.T, id, host string) {
	t.Helper()
	c.must(t, &fsm.CreateServer{ID: id, Name: "s-" + id[len(id)-2:], FlavorID: "f1", ImageRef: "img-1", Host: host})
}

// move gives server id to host to, from its owner at its epoch.
func (c *oneHost) move(t *testing.T, id, to string) {
	t.Helper()
	s := c.server(t, id)
	c.must(t, &fsm.ReassignServers{Reason: fsm.ReasonAdminMove,
		Moves: []fsm.Move{{ServerID: id, FromHost: s.Host, FromEpoch: s.Epoch, ToHost: to}}})
}

func (c *oneHost) server(t *testing.T, id string) fsm.Server {
	t.Helper()
	s, err := c.store.Server(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withRebuild returns a host owning one ACTIVE server on an Ironic node,
// with a rebuild requested.
func withRebuild(t *testing.T) *oneHost {
	t.Helper()
	c := &oneHost{name: "h1", store: fsm.New(), known: true}
	c.must(t, &fsm.RegisterHost{Name: "h1", RaftAddr: "127.0.0.2:1", APIAddr: "127.0.0.2:2", GossipAddr: "127.0.0.2:3"})
	node := "00000000-0000-4000-8000-000000000001"
	c.must(t, &fsm.SyncNodes{Upserts: []fsm.Node{{UUID: node, ResourceClass: "baremetal-gold", ProvisionState: "active",
		PowerState: "power on", InstanceUUID: serverID, AllocationUUID: serverID,
		Properties: map[string]string{"cpus": "8", "memory_mb": "1024", "local_gb": "10"}}}})
	c.must(t, &fsm.AdoptServer{ID: serverID, Name: "db-1", Flavor: fsm.Flavor{ID: "f1", Name: "bm", VCPUs: 8, RAM: 1024, Disk: 10, RxTxFactor: 1},
		ImageRef: "img-1", NodeUUID: node, AllocationUUID: serverID, Host: "h1"})
	c.must(t, &fsm.RequestServerActionWithID{RequestServerAction: fsm.RequestServerAction{
		Meta: fsm.Meta{RequestID: "req-1"}, ID: serverID, Kind: fsm.ActionRebuild, ImageRef: "img-2"}})
	return c
}

// withStoppedRebuild is withRebuild of a stopped server.
func withStoppedRebuild(t *testing.T) *oneHost {
	t.Helper()
	c := withRebuild(t)
	s := mustServer(t, c)
	c.must(t, &fsm.FinishServerAction{ID: serverID, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionRebuild})
	c.must(t, &fsm.RequestServerAction{ID: serverID, Kind: fsm.ActionStop})
	c.must(t, &fsm.FinishServerAction{ID: serverID, Host: s.Host, Epoch: s.Epoch, Kind: fsm.ActionStop})
	c.must(t, &fsm.RequestServerActionWithID{RequestServerAction: fsm.RequestServerAction{
		Meta: fsm.Meta{RequestID: "req-2"}, ID: serverID, Kind: fsm.ActionRebuild, ImageRef: "img-3"}})
	return c
}

// step is one step of a virt driver, played by the test.
type step func(ctx context.Context, h *compute.Handle, s fsm.Server) error

// script is a virt driver whose steps are the test's; a nil step is done
// at once. A build done reserves a node named after the server, and a
// delete done releases it, as an Ironic server is ACTIVE only on a node.
type script struct{ build, del, act step }

func (d *script) Kind() string { return fsm.KindIronic }

func (d *script) Build(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if err := play(d.build, ctx, h, s); err != nil || s.NodeUUID != "" {
		return err
	}
	_, err := h.Reserve(ctx, s, "node-"+s.ID, "", "")
	return err
}

func (d *script) Delete(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if err := play(d.del, ctx, h, s); err != nil || s.NodeUUID == "" {
		return err
	}
	return h.Commit(ctx, &fsm.ReleaseNode{ServerID: s.ID, Host: s.Host, Epoch: s.Epoch, NodeUUID: s.NodeUUID})
}

func (d *script) Act(ctx context.Context, h *compute.Handle, s fsm.Server) error {
	return play(d.act, ctx, h, s)
}

func play(f step, ctx context.Context, h *compute.Handle, s fsm.Server) error {
	if f == nil {
		return nil
	}
	return f(ctx, h, s)
}

// start runs a manager for c with cfg and virt until the test ends; it
// logs to the test's output.
func start(t *testing.T, c *oneHost, cfg compute.Config, virt compute.Virt) *compute.Manager {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	m, err := compute.New(cfg, c, virt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// run runs a manager for c whose driver's actions are act, with lease.
func run(t *testing.T, c *oneHost, lease time.Duration, act step) {
	t.Helper()
	start(t, c, compute.Config{IntentLease: lease}, &script{act: act})
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, timeout, testkit.Holds(what, cond))
}

// waitStatus waits until server id has status want.
func waitStatus(t *testing.T, c *oneHost, id string, want fsm.ServerStatus) fsm.Server {
	t.Helper()
	var s fsm.Server
	waitFor(t, fmt.Sprintf("server %s %s", id, want), 10*time.Second, func() bool {
		var err error
		s, err = c.store.Server(id)
		return err == nil && s.Status == want
	})
	return s
}

func mustServer(t *testing.T, c *oneHost) fsm.Server {
	t.Helper()
	return c.server(t, serverID)
}

// calls records a driver step's calls.
type calls struct {
	mu     sync.Mutex
	at     []time.Time
	ctxs   []context.Context
	epochs []uint64
	ids    []string
}

// add records a call and returns its number, from 1.
func (k *calls) add(ctx context.Context, s fsm.Server) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.at = append(k.at, time.Now())
	k.ctxs = append(k.ctxs, ctx)
	k.epochs = append(k.epochs, s.Epoch)
	k.ids = append(k.ids, s.ID)
	return len(k.at)
}

// of is the number of calls for server id.
func (k *calls) of(id string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, got := range k.ids {
		if got == id {
			n++
		}
	}
	return n
}

func (k *calls) n() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.at)
}

// gap is the time between call i and call i+1 (from 1).
func (k *calls) gap(i int) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.at[i].Sub(k.at[i-1])
}

// metric is the value of the counter or gauge name with labels (pairs of
// name and value), or a histogram's count of samples; 0 when absent.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}
