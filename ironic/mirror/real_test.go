package mirror

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/ironic"
)

// Against a real Ironic (IRONIC_URL): between full passes, a pass of
// changes mirrors a node whose traits changed and a node enrolled since
// (updated_at still null), and the next full pass marks a deleted node
// missing. Other nodes the Ironic holds are mirrored too and left alone.
func TestPassesAgainstRealIronic(t *testing.T) {
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		t.Skip("IRONIC_URL not set: export IRONIC_URL=$(scripts/ironic-up.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ir, err := ironic.New(ctx, ironic.Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) string {
		t.Helper()
		n, err := ir.CreateNode(ctx, ironic.NodeSpec{UUID: uuid.NewString(), Name: name, Driver: "fake-hardware", ResourceClass: "mirror-test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ir.DeleteNode(context.Background(), n.UUID) })
		return n.UUID
	}
	suffix := uuid.NewString()[:8]
	changed, deleted := create("mirror-changed-"+suffix), create("mirror-deleted-"+suffix)

	e := &env{ir: ir, c: newFakeCluster(), reg: prometheus.NewRegistry()}
	ns, _, clk := incSync(t, e, Config{ChangeMargin: time.Millisecond, FullSyncInterval: time.Hour, BriefFullPass: true})
	syncOnce(t, ns)
	if _, _, missing := mirrored(t, e, changed); missing {
		t.Fatal("a node of Ironic is mirrored missing")
	}

	if err := ir.UpdateNode(ctx, changed, []ironic.PatchOp{{Op: "add", Path: "/name", Value: "mirror-renamed-" + suffix}}); err != nil {
		t.Fatal(err)
	}
	enrolled := create("mirror-enrolled-" + suffix)
	if err := ir.DeleteNode(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	syncOnce(t, ns)
	if passes(t, e.reg, "changes") != 1 {
		t.Fatal("the second pass was not a pass of changes")
	}
	if name, _, _ := mirrored(t, e, changed); name != "mirror-renamed-"+suffix {
		t.Fatalf("renamed node mirrored as %q", name)
	}
	if name, _, _ := mirrored(t, e, enrolled); name != "mirror-enrolled-"+suffix {
		t.Fatalf("enrolled node mirrored as %q", name)
	}
	clk.t = clk.t.Add(time.Hour)
	syncOnce(t, ns)
	if _, _, missing := mirrored(t, e, deleted); !missing || passes(t, e.reg, "full") != 2 {
		t.Fatalf("deleted node: missing %v after %v full passes", missing, passes(t, e.reg, "full"))
	}
}
