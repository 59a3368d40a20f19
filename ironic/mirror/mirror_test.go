package mirror

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// fakeCluster is a leader that applies what it is proposed to its store
// at once, as raft would after a commit.
type fakeCluster struct {
	mu        sync.Mutex
	store     *fsm.Store
	index     uint64
	proposals int
}

func newFakeCluster() *fakeCluster { return &fakeCluster{store: fsm.New()} }

func (c *fakeCluster) Store() *fsm.Store { return c.store }
func (c *fakeCluster) IsLeader() bool    { return true }

func (c *fakeCluster) Propose(_ context.Context, cmd fsm.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd.Header().At = time.Now().UTC()
	data, err := fsm.Encode(cmd)
	if err != nil {
		return 0, err
	}
	c.index++
	c.proposals++
	return c.index, c.store.Apply(c.index, data).Err
}

// settingsOf is what the live hosts of each kind agree on; a kind absent
// from the map does not agree.
type settingsOf map[string]map[string]string

func (s settingsOf) AgreedSetting(kind, key string) (string, bool) {
	v, ok := s[kind][key]
	return v, ok
}

type env struct {
	sim *sim.Server
	ir  *ironic.Client
	c   *fakeCluster
	reg *prometheus.Registry
}

func newEnv(t *testing.T, opts sim.Options) *env {
	t.Helper()
	s := sim.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	ir, err := ironic.New(context.Background(), ironic.Options{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &env{sim: s, ir: ir, c: newFakeCluster(), reg: prometheus.NewRegistry()}
}

func (e *env) sync(t *testing.T, settings Settings, cfg Config) *NodeSync {
	t.Helper()
	cfg.Registerer = e.reg
	ns, err := New(e.c, settings, e.ir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func syncOnce(t *testing.T, ns *NodeSync) {
	t.Helper()
	if err := ns.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSyncCommitsOnlyChangesAndMarksMissing(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(3, "baremetal-gold")
	ns := e.sync(t, settingsOf{}, Config{})
	syncOnce(t, ns)
	if got := len(e.c.store.Nodes()); got != 3 {
		t.Fatalf("mirror has %d nodes, want 3", got)
	}
	before := e.c.proposals
	syncOnce(t, ns)
	if e.c.proposals != before {
		t.Fatalf("an unchanged Ironic cost %d log entries", e.c.proposals-before)
	}
	if err := e.ir.ReserveNode(context.Background(), ids[0], "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"); err != nil {
		t.Fatal(err)
	}
	syncOnce(t, ns)
	if e.c.proposals != before+1 {
		t.Fatalf("one changed node cost %d log entries", e.c.proposals-before)
	}
	n, err := e.c.store.Node(ids[0])
	if err != nil || n.InstanceUUID == "" {
		t.Fatalf("mirror of the reserved node: %+v %v", n, err)
	}
}

// The legacy inventory workaround is an Ironic driver setting: what the
// ironic hosts agree on is committed, whatever the hypervisor hosts say;
// while the ironic hosts disagree the committed value stays.
func TestLegacyInventoryFollowsTheIronicHosts(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.sim.SeedNodes(1, "baremetal-gold")
	mixed := settingsOf{
		fsm.KindIronic:     {SettingLegacyInventory: "true"},
		fsm.KindHypervisor: {SettingLegacyInventory: "false"},
	}
	syncOnce(t, e.sync(t, mixed, Config{}))
	if !e.c.store.LegacyInventory() {
		t.Fatal("the ironic hosts all report legacy inventory, but it is not committed")
	}
	syncOnce(t, New2(t, e, settingsOf{fsm.KindHypervisor: {SettingLegacyInventory: "false"}}))
	if !e.c.store.LegacyInventory() {
		t.Fatal("with no agreement among the ironic hosts the committed value must stay")
	}
	syncOnce(t, New2(t, e, settingsOf{fsm.KindIronic: {SettingLegacyInventory: "false"}}))
	if e.c.store.LegacyInventory() {
		t.Fatal("the ironic hosts agree on false, but true stays committed")
	}
}

// New2 is a second NodeSync of e, unregistered (the first holds the metrics).
func New2(t *testing.T, e *env, settings Settings) *NodeSync {
	t.Helper()
	ns, err := New(e.c, settings, e.ir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestNewNeedsItsDependencies(t *testing.T) {
	e := newEnv(t, sim.Options{})
	if _, err := New(e.c, nil, e.ir, Config{}); err == nil {
		t.Fatal("a node mirror without settings was accepted")
	}
	ns, err := New(e.c, settingsOf{}, e.ir, Config{Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ns.cfg.OrphanGrace != 2*time.Second || ns.cfg.ReapAfter != DefaultReapAfter {
		t.Fatalf("defaults: orphan grace %v, reap after %v", ns.cfg.OrphanGrace, ns.cfg.ReapAfter)
	}
}
