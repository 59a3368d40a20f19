// Package upgrade is the upgrade test from Nova's baremetal driver: it
// builds an old deployment's databases (SQLite, and MariaDB when
// scripts/mariadb-up.sh runs), migrates it with the corral CLI into Ironic
// (the simulator, and a real Ironic at $IRONIC_URL) and a 3-peer corral
// cluster, and checks that the old instances live on as corral servers.
package upgrade

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/e2e"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
)

// Deploy images the flavor update points the flavors at.
const (
	newKernel  = "http://127.0.0.1:1/images/ironic-python-agent.kernel"
	newRamdisk = "http://127.0.0.1:1/images/ironic-python-agent.initramfs"
)

// oldDB is one old deployment's two databases.
type oldDB struct {
	backend       string
	bmURL, nova   string
	bmDB, novaDB  *sql.DB // writable handles, for checksums
	bmPath, nPath string  // SQLite files
}

func randomSalt(t *testing.T) int {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return int(binary.BigEndian.Uint16(b[:])) | 1
}

// sqliteDB writes d as two SQLite files.
func sqliteDB(t *testing.T, d novabmtest.Deployment) oldDB {
	t.Helper()
	dir := t.TempDir()
	o := oldDB{backend: "sqlite", bmPath: filepath.Join(dir, "nova_bm.sqlite"), nPath: filepath.Join(dir, "nova.sqlite")}
	ctx := context.Background()
	var err error
	if o.bmDB, err = novabmtest.OpenSQLite(o.bmPath); err != nil {
		t.Fatal(err)
	}
	if o.novaDB, err = novabmtest.OpenSQLite(o.nPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.bmDB.Close(); o.novaDB.Close() })
	if err := d.WriteBareMetal(ctx, o.bmDB); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteNova(ctx, o.novaDB); err != nil {
		t.Fatal(err)
	}
	o.bmURL, o.nova = "sqlite:///"+o.bmPath, "sqlite:///"+o.nPath
	return o
}

// mariaDB writes d into two MariaDB databases with separate users, or
// skips the test when no MariaDB runs.
func mariaDB(t *testing.T, d novabmtest.Deployment, salt int) oldDB {
	t.Helper()
	sock, addr := os.Getenv("MARIADB_SOCKET"), os.Getenv("MARIADB_ADDR")
	if sock == "" || addr == "" {
		t.Skip("MARIADB_SOCKET and MARIADB_ADDR are not set: run scripts/mariadb-up.sh and " +
			"`set -a; . $MARIADB_DIR/mariadb.env; set +a` to run the MariaDB variant")
	}
	ctx := context.Background()
	o := oldDB{backend: "mariadb"}
	var err error
	sfx := fmt.Sprintf("%04x", salt)
	if o.bmURL, o.bmDB, err = novabmtest.MariaDB(ctx, sock, addr, "e2e_nova_bm_"+sfx, "e2e_bm_"+sfx, "bm-"+sfx); err != nil {
		t.Fatal(err)
	}
	if o.nova, o.novaDB, err = novabmtest.MariaDB(ctx, sock, addr, "e2e_nova_"+sfx, "e2e_nova_"+sfx, "nova-"+sfx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = o.bmDB.Exec("DROP DATABASE IF EXISTS e2e_nova_bm_" + sfx)
		_, _ = o.novaDB.Exec("DROP DATABASE IF EXISTS e2e_nova_" + sfx)
		o.bmDB.Close()
		o.novaDB.Close()
	})
	if err := d.WriteBareMetal(ctx, o.bmDB); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteNova(ctx, o.novaDB); err != nil {
		t.Fatal(err)
	}
	return o
}

// checksum digests every row of every table of both databases.
func (o oldDB) checksum(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	for _, x := range []struct {
		db     *sql.DB
		tables []string
	}{{o.bmDB, []string{"bm_nodes", "bm_interfaces"}}, {o.novaDB, []string{"instances", "instance_types", "instance_type_extra_specs"}}} {
		for _, tbl := range x.tables {
			rows, err := x.db.Query("SELECT * FROM " + tbl + " ORDER BY 1")
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			for rows.Next() {
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(h, "%s %v\n", tbl, vals)
			}
			rows.Close()
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cli runs the corral CLI against agent a and returns its exit code and
// output.
type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func startCLI(t *testing.T, c *e2e.Cluster, a *e2e.Agent, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(c.Bin, args...)
	cmd.Env = append(os.Environ(), "CORRAL_ADDR="+a.URL(), "CORRAL_TOKEN="+c.Token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

func cli(t *testing.T, c *e2e.Cluster, a *e2e.Agent, args ...string) cliResult {
	t.Helper()
	cmd, out, errb := startCLI(t, c, a, args...)
	err := cmd.Wait()
	r := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

func ironicClient(t *testing.T, ir *e2e.Ironic) *ironic.Client {
	t.Helper()
	c, err := ironic.New(context.Background(), ironic.Options{URL: ir.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ours lists the Ironic nodes among uuids, sorted, as "uuid state instance allocation".
func ours(t *testing.T, c *ironic.Client, uuids []string) []string {
	t.Helper()
	ns, err := c.ListNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, u := range uuids {
		want[u] = true
	}
	var out []string
	for _, n := range ns {
		if want[n.UUID] {
			out = append(out, fmt.Sprintf("%s %s inst=%s alloc=%s", n.UUID, n.ProvisionState, n.InstanceUUID, n.AllocationUUID))
		}
	}
	sort.Strings(out)
	return out
}

// cleanupIronic removes, at the end of a test on a real Ironic, the nodes
// the migration created (undeploying adopted ones first). Register it
// before starting the agents: it then runs after they stopped.
func cleanupIronic(t *testing.T, ir *e2e.Ironic, uuids []string) {
	if !ir.Real {
		return
	}
	t.Cleanup(func() {
		c := ironicClient(t, ir)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, u := range uuids {
			n, err := c.GetNode(ctx, u)
			if err != nil {
				continue
			}
			if n.ProvisionState == ironic.StateActive {
				if err := c.Undeploy(ctx, u); err == nil {
					_, _ = c.WaitProvisionState(ctx, u, ironic.StateAvailable)
				}
			}
			if n.AllocationUUID != "" {
				_ = c.DeleteAllocation(ctx, n.AllocationUUID)
			}
			if err := c.DeleteNode(ctx, u); err != nil {
				t.Logf("clean-up: delete node %s: %v", u, err)
			}
		}
	})
}

// owner reads a server's owner view.
type ownerView struct {
	Host   string `json:"host"`
	Epoch  uint64 `json:"epoch"`
	Status string `json:"status"`
	Node   string `json:"node_uuid"`
	Reason string `json:"reason"`
}

func owner(ctx context.Context, a *e2e.Agent, id string) (ownerView, error) {
	var body struct {
		Owner ownerView `json:"owner"`
	}
	err := a.Client().Do(ctx, http.MethodGet, "/v1/servers/"+id+"/owner?consistency=linearizable", nil, &body)
	return body.Owner, err
}

func mustContain(t *testing.T, r cliResult, frags ...string) {
	t.Helper()
	all := r.stdout + r.stderr
	for _, f := range frags {
		if !strings.Contains(all, f) {
			t.Fatalf("output lacks %q:\n%s", f, r)
		}
	}
}
