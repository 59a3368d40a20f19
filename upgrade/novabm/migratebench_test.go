package novabm_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/sim"
	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
	"github.com/corral-dev/corral/wire"
)

// migrateTarget is the Ironic a migration benchmark writes into.
type migrateTarget struct {
	name string
	url  string
	real bool
}

// simTarget serves a fresh simulator until the benchmark ends.
func simTarget(tb testing.TB) migrateTarget {
	tb.Helper()
	s := sim.New(sim.Options{})
	ts := httptest.NewServer(s)
	tb.Cleanup(func() { ts.Close(); s.Close() })
	return migrateTarget{name: "simulator", url: ts.URL}
}

// realTarget is the Ironic at $IRONIC_URL, or skips.
func realTarget(tb testing.TB) migrateTarget {
	tb.Helper()
	u := os.Getenv("IRONIC_URL")
	if u == "" {
		tb.Skip("IRONIC_URL is not set: start a real Ironic with `export IRONIC_URL=$(scripts/ironic-up.sh)`")
	}
	return migrateTarget{name: "real Ironic", url: u, real: true}
}

// realNodes is CORRAL_BENCH_MIGRATE_NODES (default 1000).
func realNodes(tb testing.TB) int {
	tb.Helper()
	v := os.Getenv("CORRAL_BENCH_MIGRATE_NODES")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		tb.Fatalf("CORRAL_BENCH_MIGRATE_NODES=%q: want a node count of at least 2", v)
	}
	return n
}

// migrateRow is one measured migration.
type migrateRow struct {
	target          string
	nodes, deployed int
	wall            time.Duration
	requests        int64 // Ironic requests of the migrator's client
	reads           int64 // of which GETs
	load1           [2]float64
	cleanup         time.Duration
}

func (r migrateRow) rate() float64 { return float64(r.nodes) / r.wall.Seconds() }

func (r migrateRow) perNode() float64 { return float64(r.requests) / float64(r.nodes) }

func (r migrateRow) readsPerNode() float64 { return float64(r.reads) / float64(r.nodes) }

// countingTransport counts the HTTP requests sent through it, and the
// GETs apart.
type countingTransport struct {
	base    http.RoundTripper
	n, gets atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Method == http.MethodGet {
		c.gets.Add(1)
	}
	return c.base.RoundTrip(r)
}

// migratePlan writes a realistic deployment of n nodes (half of them
// deployed, ids derived from salt) as SQLite, reads it back as the tool
// does and plans it.
func migratePlan(tb testing.TB, n, salt int) novabm.Plan {
	tb.Helper()
	d := novabmtest.Salted(salt, n-n/2, n/2)
	dir := tb.TempDir()
	bmPath, novaPath := filepath.Join(dir, "nova_bm.sqlite"), filepath.Join(dir, "nova.sqlite")
	ctx := context.Background()
	if err := writeWith(ctx, bmPath, d.WriteBareMetal); err != nil {
		tb.Fatal(err)
	}
	if err := writeWith(ctx, novaPath, d.WriteNova); err != nil {
		tb.Fatal(err)
	}
	bm, nv, err := read(tb, "sqlite:///"+bmPath, "sqlite:///"+novaPath)
	if err != nil {
		tb.Fatal(err)
	}
	p := novabm.BuildPlan(bm, nv, novabm.Options{Driver: "fake-hardware", DeployKernel: "k", DeployRamdisk: "r"})
	if len(p.Nodes) != n || p.Deployed() != n/2 {
		tb.Fatalf("planned %d nodes (%d deployed), want %d (%d)", len(p.Nodes), p.Deployed(), n, n/2)
	}
	return p
}

func newIronicClient(tb testing.TB, url string, hc *http.Client) *ironic.Client {
	tb.Helper()
	c, err := ironic.New(context.Background(), ironic.Options{URL: url, Logger: slog.New(slog.DiscardHandler), HTTPClient: hc})
	if err != nil {
		tb.Fatalf("Ironic at %s: %v", url, err)
	}
	return c
}

// freeSalt picks a random salt whose first node uuid Ironic does not have,
// so that every run on a shared Ironic enrolls nodes of its own.
func freeSalt(tb testing.TB, c *ironic.Client) int {
	tb.Helper()
	for range 10 {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			tb.Fatal(err)
		}
		salt := int(binary.BigEndian.Uint16(b[:])) | 1
		_, err := c.GetNode(context.Background(), novabmtest.SaltedNodeUUID(salt, 1))
		if errors.Is(err, ironic.ErrNotFound) {
			return salt
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	tb.Fatal("no free node uuid salt after 10 tries: is the Ironic full of earlier runs' nodes?")
	return 0
}

// migrateOnce migrates n nodes, half of them deployed, into the target
// with the migrator and the ironic client the tool uses (corral faked in
// memory; its node mirror read from Ironic by a second, uncounted
// client). On a real Ironic everything it created is removed afterwards.
// The timer of b (when not nil) runs only around the migration.
func migrateOnce(tb testing.TB, b *testing.B, tg migrateTarget, n int) (row migrateRow) {
	tb.Helper()
	ctx := context.Background()
	side := newIronicClient(tb, tg.url, nil)
	salt := 0
	if tg.real {
		salt = freeSalt(tb, side)
	}
	p := migratePlan(tb, n, salt)
	if tg.real {
		defer func() {
			start := time.Now()
			cleanupMigrated(tb, side, p)
			row.cleanup = time.Since(start)
		}()
	}
	ct := &countingTransport{base: http.DefaultTransport}
	ir := newIronicClient(tb, tg.url, &http.Client{Transport: ct})
	m := &novabm.Migrator{Ironic: ir, Corral: &fakeCorral{ir: side, servers: map[string]wire.AdoptServerRequest{}},
		Log: slog.New(slog.DiscardHandler)}
	if tg.real {
		start := time.Now()
		m.Progress = func(phase string, done, total int) {
			if done%100 == 0 || done == total {
				fmt.Fprintf(os.Stderr, "migrate %s: %s %d/%d after %s\n", tg.name, phase, done, total, time.Since(start).Round(time.Second))
			}
		}
	}
	row = migrateRow{target: tg.name, nodes: n, deployed: p.Deployed()}
	row.load1[0] = loadAvg1()
	before, getsBefore := ct.n.Load(), ct.gets.Load()
	if b != nil {
		b.StartTimer()
	}
	start := time.Now()
	res := m.Run(ctx, p)
	row.wall = time.Since(start)
	if b != nil {
		b.StopTimer()
	}
	row.requests, row.reads = ct.n.Load()-before, ct.gets.Load()-getsBefore
	row.load1[1] = loadAvg1()
	for _, r := range res {
		if r.Err != nil {
			tb.Fatalf("%s: node %s: %v", tg.name, r.NodeUUID, r.Err)
		}
		if r.Outcome != novabm.Created {
			tb.Fatalf("%s: node %s: %s, want %s", tg.name, r.NodeUUID, r.Outcome, novabm.Created)
		}
	}
	return row
}

// cleanupMigrated removes from a real Ironic every node of the plan with
// its ports and allocation (active nodes are undeployed first), four
// nodes at a time, and fails when one is left.
func cleanupMigrated(tb testing.TB, c *ironic.Client, p novabm.Plan) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	work := make(chan novabm.NodePlan)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		left []string
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for np := range work {
				if err := removeNode(ctx, c, np); err != nil {
					mu.Lock()
					left = append(left, fmt.Sprintf("%s: %v", np.UUID, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, np := range p.Nodes {
		work <- np
	}
	close(work)
	wg.Wait()
	if len(left) > 0 {
		tb.Errorf("clean-up left %d migrated nodes in Ironic; remove them with `openstack baremetal node delete`:\n%s",
			len(left), strings.Join(left, "\n"))
	}
}

func removeNode(ctx context.Context, c *ironic.Client, np novabm.NodePlan) error {
	n, err := c.GetNode(ctx, np.UUID)
	if errors.Is(err, ironic.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.TargetProvisionState != "" {
		if n, err = c.WaitProvisionState(ctx, np.UUID, n.TargetProvisionState); err != nil {
			return err
		}
	}
	if n.ProvisionState == ironic.StateActive {
		if err := c.Undeploy(ctx, np.UUID); err != nil {
			return err
		}
		if _, err := c.WaitProvisionState(ctx, np.UUID, ironic.StateAvailable); err != nil {
			return err
		}
	}
	if np.Instance != nil {
		// Undeploying removes the allocation; one left by an
		// interrupted run (node never active) is removed here.
		if err := c.DeleteAllocation(ctx, np.Instance.UUID); err != nil {
			return err
		}
	}
	if n.InstanceUUID != "" && n.ProvisionState != ironic.StateActive {
		if err := c.UpdateNode(ctx, np.UUID, []ironic.PatchOp{{Op: "remove", Path: "/instance_uuid"}}); err != nil {
			return err
		}
	}
	if err := c.DeleteNode(ctx, np.UUID); err != nil {
		return err
	}
	if _, err := c.GetNode(ctx, np.UUID); !errors.Is(err, ironic.ErrNotFound) {
		return fmt.Errorf("still in Ironic after its deletion (%v)", err)
	}
	return nil
}

// loadAvg1 is the machine's one-minute load average (0 when unknown).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
