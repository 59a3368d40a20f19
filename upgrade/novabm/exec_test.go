package novabm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
	"github.com/corral-dev/corral/wire"
)

// fakeCorral keeps adopted servers in memory; its mirror is what Ironic
// shows, as a node sync would report it.
type fakeCorral struct {
	ir      *ironic.Client
	mu      sync.Mutex
	servers map[string]wire.AdoptServerRequest // by id
	adopts  int
}

func (f *fakeCorral) Reservations(context.Context) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for id, s := range f.servers {
		out[s.NodeUUID] = id
	}
	return out, nil
}

func (f *fakeCorral) MirroredNodes(ctx context.Context) (map[string]novabm.MirrorNode, error) {
	ns, err := f.ir.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]novabm.MirrorNode{}
	for _, n := range ns {
		out[n.UUID] = novabm.MirrorNode{ProvisionState: n.ProvisionState, InstanceUUID: n.InstanceUUID}
	}
	return out, nil
}

func (f *fakeCorral) Adopt(_ context.Context, r wire.AdoptServerRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.servers[r.ID]; ok {
		if cur.NodeUUID != r.NodeUUID {
			return fmt.Errorf("server %s exists on node %s", r.ID, cur.NodeUUID)
		}
		return nil
	}
	f.servers[r.ID] = r
	f.adopts++
	return nil
}

// failingIronic passes calls through and fails the n-th write, as if the
// migration were killed right before it.
type failingIronic struct {
	novabm.Ironic
	failAt, writes int
	cancel         context.CancelFunc
}

var errKilled = errors.New("killed")

func (f *failingIronic) write() error {
	f.writes++
	if f.writes == f.failAt {
		f.cancel()
		return errKilled
	}
	return nil
}

func (f *failingIronic) CreateNode(ctx context.Context, s ironic.NodeSpec) (ironic.Node, error) {
	if err := f.write(); err != nil {
		return ironic.Node{}, err
	}
	return f.Ironic.CreateNode(ctx, s)
}

func (f *failingIronic) CreatePort(ctx context.Context, s ironic.PortSpec) (ironic.Port, error) {
	if err := f.write(); err != nil {
		return ironic.Port{}, err
	}
	return f.Ironic.CreatePort(ctx, s)
}

func (f *failingIronic) SetProvisionState(ctx context.Context, id, verb string) error {
	if err := f.write(); err != nil {
		return err
	}
	return f.Ironic.SetProvisionState(ctx, id, verb)
}

func (f *failingIronic) UpdateNode(ctx context.Context, id string, ops []ironic.PatchOp) error {
	if err := f.write(); err != nil {
		return err
	}
	return f.Ironic.UpdateNode(ctx, id, ops)
}

func (f *failingIronic) SetPowerState(ctx context.Context, id, target string) error {
	if err := f.write(); err != nil {
		return err
	}
	return f.Ironic.SetPowerState(ctx, id, target)
}

func (f *failingIronic) BackfillAllocation(ctx context.Context, node, inst string) (ironic.Allocation, error) {
	if err := f.write(); err != nil {
		return ironic.Allocation{}, err
	}
	return f.Ironic.BackfillAllocation(ctx, node, inst)
}

type world struct {
	ir     *ironic.Client
	corral *fakeCorral
}

func newWorld(t *testing.T) world { return newWorldB(t) }

func newWorldB(t testing.TB) world {
	t.Helper()
	ts := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(ts.Close)
	c, err := ironic.New(context.Background(), ironic.Options{URL: ts.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return world{ir: c, corral: &fakeCorral{ir: c, servers: map[string]wire.AdoptServerRequest{}}}
}

func (w world) migrator(ir novabm.Ironic) *novabm.Migrator {
	return &novabm.Migrator{Ironic: ir, Corral: w.corral, Log: slog.New(slog.DiscardHandler)}
}

// state is everything the migration leaves behind, in a comparable form.
func (w world) state(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	ns, err := w.ir.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range ns {
		ports, err := w.ir.ListPorts(ctx, n.UUID)
		if err != nil {
			t.Fatal(err)
		}
		var macs []string
		for _, p := range ports {
			macs = append(macs, p.Address+"/"+p.Extra["vif_uuid"])
		}
		sort.Strings(macs)
		out = append(out, fmt.Sprintf("node %s %s power=%q inst=%s alloc=%s image=%s ports=%v", n.UUID, n.ProvisionState,
			n.PowerState, n.InstanceUUID, n.AllocationUUID, n.InstanceInfo["image_source"], macs))
	}
	w.corral.mu.Lock()
	for id, s := range w.corral.servers {
		out = append(out, fmt.Sprintf("server %s %s node=%s flavor=%s", id, s.Name, s.NodeUUID, s.Flavor.ID))
	}
	w.corral.mu.Unlock()
	sort.Strings(out)
	return out
}

func outcomes(rs []novabm.Result) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.Outcome]++
	}
	return out
}

func TestMigrateThenRerunChangesNothing(t *testing.T) {
	p := planOf(t, novabmtest.Realistic(2, 3), novabm.Options{Driver: "fake-hardware", DeployKernel: "k", DeployRamdisk: "r"})
	w := newWorld(t)
	ctx := context.Background()
	res := w.migrator(w.ir).Run(ctx, p)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("node %s: %v", r.NodeUUID, r.Err)
		}
	}
	if got := outcomes(res); got[novabm.Created] != 5 {
		t.Fatalf("first run: %v", got)
	}
	st := w.state(t)
	want := 0
	for _, line := range st {
		switch {
		case strings.Contains(line, " available ") && strings.Contains(line, `power="power off"`) && strings.Contains(line, "inst= alloc="):
			want++
		case strings.Contains(line, " active ") && strings.Contains(line, "inst=a1b2c3d4"):
			inst := strings.Fields(line)[4][len("inst="):]
			if !strings.Contains(line, "alloc="+inst) || !strings.Contains(line, "image=http://") {
				t.Errorf("adopted node without its allocation or image: %s", line)
			}
			want++
		case strings.HasPrefix(line, "server "):
			want++
		}
	}
	if want != 8 {
		t.Fatalf("after the migration (want 2 available, 3 active, 3 servers):\n%s", strings.Join(st, "\n"))
	}
	if !strings.Contains(strings.Join(st, "\n"), novabmtest.MAC(1, 1)+"/vif-1-1") {
		t.Fatalf("vif_uuid not kept in the port's extra:\n%s", strings.Join(st, "\n"))
	}
	again := w.migrator(w.ir).Run(ctx, p)
	if got := outcomes(again); got[novabm.Unchanged] != 5 {
		for _, r := range again {
			t.Logf("%s: %s %v %v", r.NodeUUID, r.Outcome, r.Actions, r.Err)
		}
		t.Fatalf("second run: %v", got)
	}
	if !reflect.DeepEqual(w.state(t), st) {
		t.Fatal("the second run changed something")
	}
	if w.corral.adopts != 3 {
		t.Fatalf("%d adoptions committed, want 3", w.corral.adopts)
	}
}

// Killed before any one of its writes and run again, the migration ends in
// the state of one clean run, without duplicates.
func TestMigrateKilledAnywhereResumes(t *testing.T) {
	p := planOf(t, novabmtest.Realistic(1, 2), novabm.Options{Driver: "fake-hardware", DeployKernel: "k", DeployRamdisk: "r"})
	clean := newWorld(t)
	counter := &failingIronic{Ironic: clean.ir, cancel: func() {}}
	clean.migrator(counter).Run(context.Background(), p)
	want := clean.state(t)
	writes := counter.writes
	if writes < 10 {
		t.Fatalf("a clean run made only %d writes", writes)
	}
	for k := 1; k <= writes; k++ {
		w := newWorld(t)
		ctx, cancel := context.WithCancel(context.Background())
		killed := w.migrator(&failingIronic{Ironic: w.ir, failAt: k, cancel: cancel}).Run(ctx, p)
		cancel()
		if outcomes(killed)[novabm.Failed] == 0 {
			t.Fatalf("kill before write %d: nothing failed", k)
		}
		res := w.migrator(w.ir).Run(context.Background(), p)
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("rerun after a kill before write %d: node %s: %v", k, r.NodeUUID, r.Err)
			}
		}
		if got := w.state(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("kill before write %d, then rerun:\n%s\nwant:\n%s", k, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if w.corral.adopts != 2 {
			t.Fatalf("kill before write %d: %d adoptions", k, w.corral.adopts)
		}
	}
}

// A MAC that Ironic already has on another node stops that node before
// anything is written for it.
func TestMigrateRefusesForeignPortBeforeWriting(t *testing.T) {
	p := planOf(t, novabmtest.Realistic(1, 0), novabm.Options{Driver: "fake-hardware"})
	w := newWorld(t)
	ctx := context.Background()
	const other = "0b6a1f8e-0000-4000-8000-000000000001"
	if _, err := w.ir.CreateNode(ctx, ironic.NodeSpec{UUID: other, Driver: "fake-hardware"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ir.CreatePort(ctx, ironic.PortSpec{NodeUUID: other, Address: novabmtest.MAC(1, 2)}); err != nil {
		t.Fatal(err)
	}
	res := w.migrator(w.ir).Run(ctx, p)
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), other) || len(res[0].Actions) != 0 {
		t.Fatalf("result: %+v", res[0])
	}
	if _, err := w.ir.GetNode(ctx, novabmtest.NodeUUID(1)); !errors.Is(err, ironic.ErrNotFound) {
		t.Fatalf("the refused node was enrolled: %v", err)
	}
}
