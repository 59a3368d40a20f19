package novabm_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
)

func TestParseDBURL(t *testing.T) {
	ok := []struct {
		in, driver, dsnHas, path string
	}{
		{"mysql+pymysql://bm:bmpw@127.0.0.1:3307/nova_bm", "mysql", "bm:bmpw@tcp(127.0.0.1:3307)/nova_bm", ""},
		{"mysql://nova:pw@db.example/nova?charset=utf8", "mysql", "nova:pw@tcp(db.example:3306)/nova", ""},
		{"mysql+mysqldb://nova@127.0.0.1/nova?unix_socket=/run/mysqld/mysqld.sock", "mysql", "nova@unix(/run/mysqld/mysqld.sock)/nova", ""},
		{"sqlite:////var/lib/nova/nova_bm.sqlite", "sqlite", "mode=ro", "/var/lib/nova/nova_bm.sqlite"},
		{"sqlite:///nova.sqlite", "sqlite", "mode=ro", "nova.sqlite"},
	}
	for _, tc := range ok {
		u, err := novabm.ParseDBURL(tc.in)
		if err != nil {
			t.Errorf("ParseDBURL(%q): %v", tc.in, err)
			continue
		}
		if u.Driver != tc.driver || !strings.Contains(u.DSN, tc.dsnHas) || u.Path != tc.path {
			t.Errorf("ParseDBURL(%q) = %+v, want driver %s, DSN with %q, path %q", tc.in, u, tc.driver, tc.dsnHas, tc.path)
		}
		if strings.Contains(u.Redacted, "bmpw") {
			t.Errorf("redacted form %q shows the password", u.Redacted)
		}
	}
	for _, bad := range []string{"nova_bm", "postgresql://u:p@h/nova", "mysql://u:secretpw@h:3306/", "mysql:///nova", "sqlite://", "sqlite:///"} {
		_, err := novabm.ParseDBURL(bad)
		if !errors.Is(err, novabm.ErrBadURL) {
			t.Errorf("ParseDBURL(%q) = %v, want ErrBadURL", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secretpw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// writeFixture writes d's two databases as SQLite files and returns their URLs.
func writeFixture(t *testing.T, d novabmtest.Deployment) (bmURL, novaURL string) {
	t.Helper()
	dir := t.TempDir()
	bmPath, novaPath := filepath.Join(dir, "nova_bm.sqlite"), filepath.Join(dir, "nova.sqlite")
	ctx := context.Background()
	if err := writeWith(ctx, bmPath, d.WriteBareMetal); err != nil {
		t.Fatalf("fixture nova_bm: %v", err)
	}
	if err := writeWith(ctx, novaPath, d.WriteNova); err != nil {
		t.Fatalf("fixture nova: %v", err)
	}
	return "sqlite:///" + bmPath, "sqlite:///" + novaPath
}

type sqlDB = sql.DB

func writeWith(ctx context.Context, path string, f func(context.Context, *sqlDB) error) error {
	db, err := novabmtest.OpenSQLite(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return f(ctx, db)
}

func read(t testing.TB, bmURL, novaURL string) (novabm.BareMetal, novabm.Nova, error) {
	t.Helper()
	ctx := context.Background()
	var bm novabm.BareMetal
	var nv novabm.Nova
	for _, x := range []struct {
		url  string
		read func(*sqlDB, string) error
	}{
		{bmURL, func(db *sqlDB, n string) (err error) { bm, err = novabm.ReadBareMetal(ctx, db, n); return }},
		{novaURL, func(db *sqlDB, n string) (err error) { nv, err = novabm.ReadNova(ctx, db, n); return }},
	} {
		u, err := novabm.ParseDBURL(x.url)
		if err != nil {
			return bm, nv, err
		}
		db, err := novabm.Open(ctx, u)
		if err != nil {
			return bm, nv, err
		}
		err = x.read(db, u.Redacted)
		db.Close()
		if err != nil {
			return bm, nv, err
		}
	}
	return bm, nv, nil
}

func TestReadCurrentSchema(t *testing.T) {
	bmURL, novaURL := writeFixture(t, novabmtest.Realistic(2, 3))
	bm, nv, err := read(t, bmURL, novaURL)
	if err != nil {
		t.Fatal(err)
	}
	if len(bm.Nodes) != 6 || !bm.Nodes[5].Deleted || bm.Nodes[0].UUIDDerived || bm.Nodes[0].UUID != novabmtest.NodeUUID(1) {
		t.Fatalf("nodes: %+v", bm.Nodes)
	}
	if n := bm.Nodes[0]; n.PMAddress == "" || n.TerminalPort != 8001 || len(n.Interfaces) != 2 || n.Interfaces[0].VIFUUID != "vif-1-1" {
		t.Fatalf("node 1: %+v", n)
	}
	if len(nv.Instances) != 4 { // 3 deployed + the libvirt one; the deleted one is not read
		t.Fatalf("instances: %+v", nv.Instances)
	}
	if f := nv.Flavors[1]; f.FlavorID != novabmtest.FlavorBM || f.ExtraSpecs[novabm.SpecDeployKernel] != novabmtest.OldKernel || !f.IsPublic {
		t.Fatalf("flavor 1: %+v", f)
	}
}

func TestReadOldSchema(t *testing.T) {
	d := novabmtest.Realistic(1, 1)
	d.OldSchema = true
	d.Nodes[0].ProvMAC = "52:54:00:ff:00:01"
	d.Nodes = d.Nodes[:2] // the old schema has no soft delete
	var live []novabmtest.Instance
	for _, in := range d.Instances {
		if !in.Deleted {
			live = append(live, in)
		}
	}
	d.Instances = live
	d.Instances[0].Node = "2" // old deployments named the node by its id
	bmURL, novaURL := writeFixture(t, d)
	bm, nv, err := read(t, bmURL, novaURL)
	if err != nil {
		t.Fatal(err)
	}
	if bm.Schema.Has("bm_nodes", "uuid") || !bm.Schema.Has("bm_nodes", "prov_mac_address") || bm.Schema.Has("bm_nodes", "deleted") {
		t.Fatalf("schema: %+v", bm.Schema)
	}
	n := bm.Nodes[0]
	if !n.UUIDDerived || n.UUID != novabm.DerivedUUID(1) || n.ProvMAC != "52:54:00:ff:00:01" {
		t.Fatalf("old node: %+v", n)
	}
	p := novabm.BuildPlan(bm, nv, novabm.Options{})
	if len(p.Nodes) != 2 || len(p.Skipped) != 0 {
		t.Fatalf("plan: %+v", p)
	}
	if ports := p.Nodes[0].Ports; len(ports) != 3 || ports[2].Address != "52:54:00:ff:00:01" {
		t.Fatalf("ports of the old node: %+v", ports)
	}
	if p.Nodes[1].Instance == nil || p.Nodes[1].UUID != novabm.DerivedUUID(2) {
		t.Fatalf("deployed old node: %+v", p.Nodes[1])
	}
}

func TestReadMissingColumnOrTable(t *testing.T) {
	for _, tc := range []struct{ drop, wantTable, wantCol string }{
		{"bm_nodes.pm_address", "bm_nodes", "pm_address"},
		{"bm_interfaces.address", "bm_interfaces", "address"},
		{"instances.node", "instances", "node"},
		{"instance_type_extra_specs.key", "instance_type_extra_specs", "key"},
	} {
		d := novabmtest.Realistic(1, 1)
		d.DropColumn = tc.drop
		bmURL, novaURL := writeFixture(t, d)
		_, _, err := read(t, bmURL, novaURL)
		if !errors.Is(err, novabm.ErrSchema) || !strings.Contains(err.Error(), tc.wantTable) || !strings.Contains(err.Error(), tc.wantCol) {
			t.Errorf("without %s: %v, want ErrSchema naming %s and %s", tc.drop, err, tc.wantTable, tc.wantCol)
		}
	}
	// The nova database given as nova_bm: no bm_nodes table.
	_, novaURL := writeFixture(t, novabmtest.Realistic(1, 1))
	_, _, err := read(t, novaURL, novaURL)
	if !errors.Is(err, novabm.ErrSchema) || !strings.Contains(err.Error(), "no table bm_nodes") {
		t.Fatalf("nova as nova_bm: %v", err)
	}
}

func TestReadUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.sqlite")
	_, _, err := read(t, "sqlite:///"+missing, "sqlite:///"+missing)
	if !errors.Is(err, novabm.ErrUnreadable) {
		t.Fatalf("missing file: %v", err)
	}
	if _, serr := os.Stat(missing); serr == nil {
		t.Fatal("reading a missing SQLite file created it")
	}
	junk := filepath.Join(dir, "junk.sqlite")
	if err := os.WriteFile(junk, []byte("this is not a database, just text that is long enough to not be a header"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(t, "sqlite:///"+junk, "sqlite:///"+junk); !errors.Is(err, novabm.ErrUnreadable) {
		t.Fatalf("junk file: %v", err)
	}
}
