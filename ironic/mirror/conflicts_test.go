package mirror

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
)

// logBuffer is a JSON log the test reads back.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// refusals are the nodes of the refusal warnings logged so far.
func (b *logBuffer) refusals(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "Placement refused a node provider's inventory") {
			if rec["level"] != "WARN" || rec["reason"] == "" {
				t.Fatalf("refusal logged as %v", rec)
			}
			out = append(out, rec["node"].(string))
		}
	}
	return out
}

// A refused inventory is logged and counted once, for the entry that
// recorded it: on a node the entry changed, or on a node it did not touch
// when the entry switched the legacy inventory; the retries at the later
// syncs report nothing new.
func TestRefusedInventoryIsReportedOnce(t *testing.T) {
	e := newEnv(t, sim.Options{})
	ids := e.sim.SeedNodes(3, "baremetal-gold")
	logs := &logBuffer{}
	legacy := settingsOf{fsm.KindIronic: {SettingLegacyInventory: "true"}}
	ns := e.sync(t, legacy, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	syncOnce(t, ns)
	if !e.c.store.LegacyInventory() {
		t.Fatal("legacy inventory not committed")
	}

	// Two servers whose flavor does not zero the standard classes: their
	// claims hold VCPU, MEMORY_MB and DISK_GB of their nodes.
	ctx := context.Background()
	propose := func(cmd fsm.Command) {
		t.Helper()
		if d, ok := e.c.store.Schedule(cmd, nil); ok {
			cmd = d.Command // the leader's decisions, as it commits them
		}
		if _, err := e.c.Propose(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	propose(&fsm.RegisterHost{Name: "h1", Kind: fsm.KindIronic})
	propose(&fsm.CreateFlavor{Flavor: fsm.Flavor{ID: "old", Name: "bm-old", VCPUs: 8, RAM: 16384, Disk: 100, IsPublic: true,
		ExtraSpecs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}}})
	var claimed []string
	for _, id := range []string{"10000000-0000-4000-9000-000000000001", "10000000-0000-4000-9000-000000000002"} {
		propose(&fsm.CreateServer{ID: id, Name: "s", FlavorID: "old", ImageRef: "img"})
		srv, err := e.c.store.Server(id)
		if err != nil || srv.ClaimedNode == "" || srv.Claim[srv.ClaimedNode]["VCPU"] != 8 {
			t.Fatalf("server %s: %+v %v; want a claim of 8 VCPU on a node", id, srv, err)
		}
		claimed = append(claimed, srv.ClaimedNode)
	}
	if slices.Contains(claimed, "") || claimed[0] == claimed[1] {
		t.Fatalf("claimed nodes %v", claimed)
	}

	// A node changed in Ironic shrinks below its claim: refused for it.
	patchCPUs(t, e, claimed[0], 4)
	syncOnce(t, ns)
	if got := logs.refusals(t); !slices.Equal(got, claimed[:1]) {
		t.Fatalf("refusals logged for %v, want %v", got, claimed[:1])
	}
	if got := counter(t, e, "corral_node_inventory_conflicts_total"); got != 1 {
		t.Fatalf("conflicts counted %v, want 1", got)
	}
	// Retried at the next sync (an entry is committed), not reported again.
	before := e.c.proposals
	syncOnce(t, ns)
	if e.c.proposals == before {
		t.Fatal("a node holding a refused inventory was not retried")
	}
	if got := logs.refusals(t); len(got) != 1 {
		t.Fatalf("a retry reported the refusal again: %v", got)
	}

	// Switching the legacy inventory off refuses the other claimed node,
	// which this entry does not upsert.
	ns2 := New2(t, e, settingsOf{fsm.KindIronic: {SettingLegacyInventory: "false"}})
	ns2.log = slog.New(slog.NewJSONHandler(logs, nil))
	ns2.conflicts = ns.conflicts
	syncOnce(t, ns2)
	if got := logs.refusals(t); !slices.Equal(got, claimed) {
		t.Fatalf("refusals logged for %v, want %v", got, claimed)
	}
	if got := counter(t, e, "corral_node_inventory_conflicts_total"); got != 2 {
		t.Fatalf("conflicts counted %v, want 2", got)
	}
	for _, id := range ids {
		n, _ := e.c.store.Node(id)
		if want := slices.Contains(claimed, id); (n.InventoryConflict != "") != want {
			t.Fatalf("node %s: conflict %q, want one: %v", id, n.InventoryConflict, want)
		}
	}
}

// patchCPUs sets a node's properties/cpus in Ironic.
func patchCPUs(t *testing.T, e *env, id string, cpus int) {
	t.Helper()
	if err := e.ir.UpdateNode(context.Background(), id, []ironic.PatchOp{{Op: "replace", Path: "/properties/cpus", Value: cpus}}); err != nil {
		t.Fatal(err)
	}
}
