package mirror

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// errListing is the failure failingIronic injects into a listing.
var errListing = errors.New("listing failed mid-stream")

// failingIronic fails its listings after visiting after nodes (0: never),
// as a page Ironic refuses after the first ones.
type failingIronic struct {
	*ironic.Client
	after int
}

func (f *failingIronic) wrap(visit func(ironic.Node) error) func(ironic.Node) error {
	n := 0
	return func(node ironic.Node) error {
		if n++; f.after > 0 && n > f.after {
			return errListing
		}
		return visit(node)
	}
}

func (f *failingIronic) VisitNodes(ctx context.Context, opts ironic.ListOptions, visit func(ironic.Node) error) (time.Time, error) {
	return f.Client.VisitNodes(ctx, opts, f.wrap(visit))
}

func (f *failingIronic) VisitNodesBrief(ctx context.Context, visit func(ironic.Node) error) (time.Time, error) {
	return f.Client.VisitNodesBrief(ctx, f.wrap(visit))
}

// A full pass commits the changed nodes as its listing streams in, an
// entry of maxSyncBatch at a time. When the listing fails midway the pass
// fails: what it committed is what Ironic showed, but it marks no node
// missing, keeps the reaper's nodes of the pass before, and leaves the
// next pass a full one.
func TestFullPassFailingMidListing(t *testing.T) {
	e := newEnv(t, sim.Options{})
	const n = 2*maxSyncBatch + 200
	ids := e.sim.SeedNodes(n, "baremetal-gold")
	ir := &failingIronic{Client: e.ir, after: 2*maxSyncBatch + 100}
	ns, err := New(e.c, settingsOf{}, ir, Config{Registerer: e.reg, BriefFullPass: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ns.SyncOnce(ctx); !errors.Is(err, errListing) {
		t.Fatalf("a pass whose listing failed: %v", err)
	}
	if got := len(e.c.store.Nodes()); got != 2*maxSyncBatch || e.c.proposals != 2 {
		t.Fatalf("the failed pass committed %d nodes in %d entries, want the %d of two full entries", got, e.c.proposals, 2*maxSyncBatch)
	}
	if !ns.watermark.IsZero() || passes(t, e.reg, "full") != 0 {
		t.Fatal("a failed pass moved the watermark or counted as a full pass")
	}

	ir.after = 0
	syncOnce(t, ns)
	if got := len(e.c.store.Nodes()); got != n || passes(t, e.reg, "full") != 1 {
		t.Fatalf("after a full pass: %d nodes mirrored, %v full passes", got, passes(t, e.reg, "full"))
	}
	// The reaper holds the reserved nodes of the last complete pass only.
	inst := "0b7c6a52-50a3-4bd6-a6d5-1fa1b8d3b0d1"
	if err := e.ir.ReserveNode(ctx, ids[0], inst); err != nil {
		t.Fatal(err)
	}
	if err := e.ir.DeleteNode(ctx, ids[n-1]); err != nil {
		t.Fatal(err)
	}
	ns.watermark = time.Time{} // the next pass is a full one
	ir.after = 10
	if err := ns.SyncOnce(ctx); !errors.Is(err, errListing) {
		t.Fatalf("a pass whose listing failed: %v", err)
	}
	if _, ok := ns.held[ids[0]]; ok {
		t.Fatal("the reaper took the nodes of a failed pass")
	}
	for _, m := range e.c.store.Nodes() {
		if m.Missing {
			t.Fatalf("a failed pass marked node %s missing", m.UUID)
		}
	}
	ir.after = 0
	syncOnce(t, ns)
	if _, ok := ns.held[ids[0]]; !ok {
		t.Fatal("the reaper does not hold the reserved node after a complete pass")
	}
	if _, _, missing := mirrored(t, e, ids[n-1]); !missing {
		t.Fatal("the node deleted from Ironic is not marked missing by the complete pass")
	}
	if _, got, _ := mirrored(t, e, ids[0]); got != inst {
		t.Fatalf("reserved node mirrored with instance %q", got)
	}
}

// A node listed twice in a pass is mirrored as listed last, whether its
// first observation is still pending or already committed, even when the
// last one is what the mirror held before the pass.
func TestNodeListedTwiceInAPass(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ns := e.sync(t, settingsOf{}, Config{})
	ctx := context.Background()
	store := e.c.store
	node := ironic.Node{UUID: "00000000-0000-4000-8000-000000000001", Name: "a", ResourceClass: "gold",
		ProvisionState: "available", PowerState: "power off"}
	p := ns.newPass(store, false)
	if err := p.observe(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := p.finish(ctx); err != nil {
		t.Fatal(err)
	}

	renamed := node
	renamed.Name = "b"
	p = ns.newPass(store, false)
	for _, n := range []ironic.Node{renamed, node} { // changed, then back as the mirror holds it
		if err := p.observe(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := store.Node(node.UUID); m.Name != "a" {
		t.Fatalf("a node listed changed, then as before, mirrored as %q", m.Name)
	}

	// More than an entry between the two observations: the first is
	// committed by then.
	p = ns.newPass(store, false)
	if err := p.observe(ctx, renamed); err != nil {
		t.Fatal(err)
	}
	for i := range maxSyncBatch {
		other := node
		other.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+2)
		if err := p.observe(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := store.Node(node.UUID); m.Name != "b" {
		t.Fatalf("a full batch is not committed as it fills: %q", m.Name)
	}
	if err := p.observe(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := p.finish(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := store.Node(node.UUID); m.Name != "a" {
		t.Fatalf("a node listed again after its first observation was committed: mirrored as %q", m.Name)
	}
}
