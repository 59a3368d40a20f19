package reaper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/neutron"
)

// cluster is a peer whose store the test writes, as raft would apply.
type cluster struct {
	t      *testing.T
	store  *fsm.Store
	index  uint64
	leader atomic.Bool
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, store: fsm.New()}
	c.leader.Store(true)
	c.apply(&fsm.RegisterHost{Name: "h1", Kind: fsm.KindIronic})
	c.apply(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "bm", Name: "bm", VCPUs: 1, RAM: 1024, Disk: 1, IsPublic: true}})
	return c
}

func (c *cluster) Store() *fsm.Store { return c.store }
func (c *cluster) IsLeader() bool    { return c.leader.Load() }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// apply commits cmd stamped at t0 unless it carries its own time.
func (c *cluster) apply(cmd fsm.Command) any {
	c.t.Helper()
	if cmd.Header().At.IsZero() {
		cmd.Header().At = t0
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	c.index++
	r := c.store.Apply(c.index, data)
	if r.Err != nil {
		c.t.Fatalf("apply %T: %v", cmd, r.Err)
	}
	return r.Value
}

// boot records a live server owned by h1 at epoch 1.
func (c *cluster) boot(id string, nets ...fsm.Network) {
	c.t.Helper()
	c.apply(&fsm.CreateServer{ID: id, Name: "s", FlavorID: "bm", ImageRef: "img", Host: "h1", Networks: nets, ProjectID: "p1"})
}

// remove deletes the server as its owner would, at at.
func (c *cluster) remove(id string, at time.Time) {
	c.t.Helper()
	c.apply(&fsm.DeleteServer{Meta: fsm.Meta{At: at}, ID: id})
	c.apply(&fsm.SetServerTask{Meta: fsm.Meta{At: at}, ID: id, Host: "h1", Epoch: 1, Status: fsm.StatusDeleted})
}

// fakeNeutron keeps ports in memory and raises a port's revision at every
// change; a change at another revision is refused, as Neutron's If-Match.
type fakeNeutron struct {
	mu    sync.Mutex
	ports map[string]neutron.PortState
	macs  int
	calls []string
	fail  error // every call answers it
}

func newFakeNeutron() *fakeNeutron { return &fakeNeutron{ports: map[string]neutron.PortState{}} }

// add makes a port bound to device (owner compute:nova, node n1, the NIC's MAC).
func (f *fakeNeutron) add(id, description, device string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := neutron.PortState{Description: description, RevisionNumber: 1}
	p.ID, p.NetworkID, p.ProjectID, p.DeviceID, p.DeviceOwner = id, "net-a", "p1", device, "compute:nova"
	p.HostID, p.MACAddress, p.Profile = "n1", "52:54:00:aa:00:01", map[string]any{"local_link_information": []any{}}
	f.ports[id] = p
}

// touch changes a port as someone else would (a new revision).
func (f *fakeNeutron) touch(id string, change func(*neutron.PortState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.ports[id]
	change(&p)
	p.RevisionNumber++
	f.ports[id] = p
}

func (f *fakeNeutron) port(id string) (neutron.PortState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.ports[id]
	return p, ok
}

func (f *fakeNeutron) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeNeutron) PortsDescribed(_ context.Context, d string) ([]neutron.PortState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list "+d)
	if f.fail != nil {
		return nil, f.fail
	}
	var out []neutron.PortState
	for _, id := range slices.Sorted(maps.Keys(f.ports)) {
		if f.ports[id].Description == d {
			out = append(out, f.ports[id])
		}
	}
	return out, nil
}

func (f *fakeNeutron) PortState(_ context.Context, id string) (neutron.PortState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get "+id)
	if f.fail != nil {
		return neutron.PortState{}, f.fail
	}
	p, ok := f.ports[id]
	if !ok {
		return p, fmt.Errorf("%w: port %s", neutron.ErrNotFound, id)
	}
	return p, nil
}

func (f *fakeNeutron) at(id string, rev int) (neutron.PortState, error) {
	p, ok := f.ports[id]
	switch {
	case !ok:
		return p, fmt.Errorf("%w: port %s", neutron.ErrNotFound, id)
	case p.RevisionNumber != rev:
		return p, fmt.Errorf("%w: port %s is at revision %d, not %d", neutron.ErrChanged, id, p.RevisionNumber, rev)
	}
	return p, nil
}

func (f *fakeNeutron) DeletePortAtRevision(_ context.Context, id string, rev int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("delete %s@%d", id, rev))
	if f.fail != nil {
		return f.fail
	}
	if _, err := f.at(id, rev); err != nil {
		return err
	}
	delete(f.ports, id)
	return nil
}

func (f *fakeNeutron) ReleasePortAtRevision(_ context.Context, id string, rev int) (neutron.PortState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("release %s@%d", id, rev))
	if f.fail != nil {
		return neutron.PortState{}, f.fail
	}
	p, err := f.at(id, rev)
	if err != nil {
		return p, err
	}
	f.macs++
	p.DeviceID, p.DeviceOwner, p.HostID, p.Profile = "", "", "", map[string]any{}
	p.MACAddress = fmt.Sprintf("fa:16:3e:00:00:%02x", f.macs)
	p.RevisionNumber += 2
	f.ports[id] = p
	return p, nil
}

// clock is the leader's clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// syncBuffer is a log sink safe for the reaper and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records are the JSON log records whose message contains msg.
func (s *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.Contains(rec["msg"].(string), msg) {
			out = append(out, rec)
		}
	}
	return out
}

type env struct {
	c    *cluster
	nt   *fakeNeutron
	clk  *clock
	reg  *prometheus.Registry
	logs *syncBuffer
	r    *Reaper
}

const grace = 10 * time.Minute

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{c: newCluster(t), nt: newFakeNeutron(), clk: &clock{t: t0.Add(time.Hour)}, reg: prometheus.NewRegistry(),
		logs: &syncBuffer{}}
	r, err := New(e.c, e.nt, Config{Interval: time.Minute, Grace: grace, Registerer: e.reg, Now: e.clk.now,
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	return e
}

func (e *env) pass(t *testing.T) {
	t.Helper()
	if err := e.r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// reaped reads corral_neutron_ports_reaped_total{action, reason}.
func (e *env) reaped(t *testing.T, action, reason string) float64 {
	t.Helper()
	return e.metric(t, "corral_neutron_ports_reaped_total", map[string]string{"action": action, "reason": reason})
}

func (e *env) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
