// Package novabmtest builds the databases of an old Nova baremetal
// deployment (nova_bm and nova) for tests, in SQLite or MySQL/MariaDB.
package novabmtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/go-sql-driver/mysql" // "mysql" driver for MariaDB fixtures
	_ "modernc.org/sqlite"             // "sqlite" driver
)

// Iface is a bm_interfaces row.
type Iface struct {
	ID      int64
	MAC     string
	VIF     string
	Deleted bool
}

// Node is a bm_nodes row.
type Node struct {
	ID           int64
	UUID         string // ignored by the old schema
	Host         string
	InstanceUUID string
	InstanceName string
	CPUs         int64
	MemoryMB     int64
	LocalGB      int64
	PMAddress    string
	PMUser       string
	PMPassword   string
	TerminalPort int64
	ProvMAC      string // old schema only
	Deleted      bool
	Ifaces       []Iface
}

// Instance is an instances row.
type Instance struct {
	UUID, Name, Host, Node, VMState, ImageRef string
	TypeID                                    int64
	Project, User                             string
	Deleted                                   bool
}

// Flavor is an instance_types row with its extra specs.
type Flavor struct {
	ID                                  int64
	FlavorID, Name                      string
	MemoryMB, VCPUs, RootGB, EphGB, Swp int64
	Specs                               map[string]string
	Deleted                             bool
}

// Deployment is an old deployment's two databases.
type Deployment struct {
	// OldSchema: bm_nodes has no uuid but prov_mac_address, and no table
	// has a deleted column.
	OldSchema bool
	// DropColumn, when set as "table.column", leaves that column out.
	DropColumn string
	Nodes      []Node
	Instances  []Instance
	Flavors    []Flavor
}

// Names of the realistic deployment's flavors and images.
const (
	OldKernel   = "1e0e44b3-0000-4000-8000-00000000c0de"
	OldRamdisk  = "1e0e44b3-0000-4000-8000-00000000beef"
	FlavorBM    = "bm.small"
	FlavorVM    = "m1.tiny"
	ComputeHost = "bm-compute-1"
)

// NodeUUID, InstanceUUID and MAC give the realistic deployment's ids
// (salt 0; see Salted).
func NodeUUID(i int) string     { return SaltedNodeUUID(0, i) }
func InstanceUUID(i int) string { return SaltedInstanceUUID(0, i) }
func MAC(node, nic int) string  { return SaltedMAC(0, node, nic) }

// SaltedNodeUUID, SaltedInstanceUUID and SaltedMAC are the ids of a
// deployment built with a salt: deployments of different salts share no
// uuid and no MAC (tests sharing one Ironic).
func SaltedNodeUUID(salt, i int) string {
	return fmt.Sprintf("6fae68da-%04x-4a9d-87c4-%012x", salt&0xffff, i)
}
func SaltedInstanceUUID(salt, i int) string {
	return fmt.Sprintf("a1b2c3d4-%04x-4000-8000-%012x", salt&0xffff, i)
}
func SaltedMAC(salt, node, nic int) string {
	return fmt.Sprintf("52:%02x:%02x:%02x:%02x:%02x", salt>>8&0xff, salt&0xff, node>>8&0xff, node&0xff, nic)
}

// Realistic is a deployment with free nodes (ids 1..free), deployed
// instances on the next deployed nodes, two interfaces per node, one
// soft-deleted node (with an interface and a deleted instance), a
// bare-metal flavor naming the old deploy kernel and ramdisk, a VM flavor
// and an instance of another driver that the migration leaves alone.
func Realistic(free, deployed int) Deployment { return Salted(0, free, deployed) }

// Salted is Realistic with ids derived from salt.
func Salted(salt, free, deployed int) Deployment {
	nodeUUID := func(i int) string { return SaltedNodeUUID(salt, i) }
	instUUID := func(i int) string { return SaltedInstanceUUID(salt, i) }
	mac := func(n, k int) string { return SaltedMAC(salt, n, k) }
	d := Deployment{Flavors: []Flavor{
		{ID: 1, FlavorID: FlavorBM, Name: "baremetal.small", MemoryMB: 65536, VCPUs: 16, RootGB: 100, EphGB: 0, Swp: 0,
			Specs: map[string]string{"baremetal:deploy_kernel_id": OldKernel, "baremetal:deploy_ramdisk_id": OldRamdisk, "cpu_arch": "x86_64"}},
		{ID: 2, FlavorID: FlavorVM, Name: "m1.tiny", MemoryMB: 512, VCPUs: 1, RootGB: 1},
	}}
	for i := 1; i <= free+deployed; i++ {
		n := Node{ID: int64(i), UUID: nodeUUID(i), Host: ComputeHost, CPUs: 16, MemoryMB: 65536, LocalGB: 200,
			PMAddress: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), PMUser: "admin", PMPassword: "secret", TerminalPort: int64(8000 + i),
			Ifaces: []Iface{{ID: int64(2*i - 1), MAC: mac(i, 1), VIF: fmt.Sprintf("vif-%d-1", i)}, {ID: int64(2 * i), MAC: mac(i, 2)}}}
		if i > free {
			k := i - free
			n.InstanceUUID, n.InstanceName = instUUID(k), fmt.Sprintf("instance-%08x", k)
			d.Instances = append(d.Instances, Instance{UUID: instUUID(k), Name: fmt.Sprintf("db-%d", k), Host: ComputeHost,
				Node: nodeUUID(i), VMState: "active", ImageRef: fmt.Sprintf("http://127.0.0.1:1/images/app-%d.qcow2", k), TypeID: 1,
				Project: "proj-1", User: "user-1"})
		}
		d.Nodes = append(d.Nodes, n)
	}
	gone := free + deployed + 1
	d.Nodes = append(d.Nodes, Node{ID: int64(gone), UUID: nodeUUID(gone), Host: ComputeHost, InstanceUUID: instUUID(9999),
		CPUs: 8, MemoryMB: 1024, LocalGB: 10, PMAddress: "10.9.9.9", PMUser: "admin", PMPassword: "x", Deleted: true,
		Ifaces: []Iface{{ID: 100000, MAC: mac(gone, 1), Deleted: true}}})
	d.Instances = append(d.Instances,
		Instance{UUID: instUUID(9999), Name: "gone", Host: ComputeHost, Node: nodeUUID(gone), VMState: "deleted", ImageRef: "x", TypeID: 1, Project: "p", User: "u", Deleted: true},
		Instance{UUID: instUUID(8888), Name: "vm-on-libvirt", Host: "kvm-1", Node: "kvm-1.example.org", VMState: "active", ImageRef: "cirros", TypeID: 2, Project: "p", User: "u"})
	return d
}

func (d Deployment) has(tbl, col string) bool { return d.DropColumn != tbl+"."+col }

// ddl returns the CREATE TABLE statements of a database ("nova_bm" or "nova").
func (d Deployment) ddl(dbName string) []string {
	type col struct{ name, typ string }
	mk := func(tbl string, cols []col) string {
		var parts []string
		for _, c := range cols {
			if d.has(tbl, c.name) {
				parts = append(parts, "`"+c.name+"` "+c.typ)
			}
		}
		return "CREATE TABLE " + tbl + " (" + strings.Join(parts, ", ") + ")"
	}
	del := []col{{"deleted", "INTEGER DEFAULT 0"}}
	if d.OldSchema {
		del = nil
	}
	if dbName == "nova_bm" {
		nodes := []col{{"id", "INTEGER NOT NULL PRIMARY KEY"}}
		if !d.OldSchema {
			nodes = append(nodes, col{"uuid", "VARCHAR(36)"})
		}
		nodes = append(nodes, col{"service_host", "VARCHAR(255)"}, col{"instance_uuid", "VARCHAR(36)"},
			col{"instance_name", "VARCHAR(255)"}, col{"cpus", "INTEGER"}, col{"memory_mb", "INTEGER"}, col{"local_gb", "INTEGER"},
			col{"pm_address", "TEXT"}, col{"pm_user", "TEXT"}, col{"pm_password", "TEXT"}, col{"terminal_port", "INTEGER"},
			col{"task_state", "VARCHAR(255)"}, col{"root_mb", "INTEGER"}, col{"swap_mb", "INTEGER"}, col{"ephemeral_mb", "INTEGER"},
			col{"preserve_ephemeral", "BOOLEAN"}, col{"image_path", "VARCHAR(255)"}, col{"pxe_config_path", "VARCHAR(255)"},
			col{"deploy_key", "VARCHAR(255)"})
		if d.OldSchema {
			nodes = append(nodes, col{"prov_mac_address", "TEXT"})
		}
		nodes = append(nodes, del...)
		ifs := append([]col{{"id", "INTEGER NOT NULL PRIMARY KEY"}, {"bm_node_id", "INTEGER"}, {"address", "VARCHAR(255)"},
			{"datapath_id", "VARCHAR(255)"}, {"port_no", "INTEGER"}, {"vif_uuid", "VARCHAR(36)"}}, del...)
		return []string{mk("bm_nodes", nodes), mk("bm_interfaces", ifs)}
	}
	inst := append([]col{{"id", "INTEGER NOT NULL PRIMARY KEY"}, {"uuid", "VARCHAR(36)"}, {"display_name", "VARCHAR(255)"},
		{"hostname", "VARCHAR(255)"}, {"host", "VARCHAR(255)"}, {"node", "VARCHAR(255)"}, {"vm_state", "VARCHAR(255)"},
		{"power_state", "INTEGER"}, {"image_ref", "VARCHAR(255)"}, {"instance_type_id", "INTEGER"},
		{"project_id", "VARCHAR(255)"}, {"user_id", "VARCHAR(255)"}}, del...)
	types := append([]col{{"id", "INTEGER NOT NULL PRIMARY KEY"}, {"name", "VARCHAR(255)"}, {"memory_mb", "INTEGER"},
		{"vcpus", "INTEGER"}, {"root_gb", "INTEGER"}, {"ephemeral_gb", "INTEGER"}, {"swap", "INTEGER"},
		{"flavorid", "VARCHAR(255)"}, {"rxtx_factor", "FLOAT"}, {"is_public", "BOOLEAN"}}, del...)
	specs := append([]col{{"id", "INTEGER NOT NULL PRIMARY KEY"}, {"instance_type_id", "INTEGER"}, {"key", "VARCHAR(255)"},
		{"value", "VARCHAR(255)"}}, del...)
	return []string{mk("instances", inst), mk("instance_types", types), mk("instance_type_extra_specs", specs)}
}

// insert writes one row, leaving out the columns the schema lacks.
func (d Deployment) insert(ctx context.Context, tx *sql.Tx, tbl string, cols []string, vals []any) error {
	var names, marks []string
	var args []any
	for i, c := range cols {
		if c == "deleted" && d.OldSchema || c == "uuid" && tbl == "bm_nodes" && d.OldSchema ||
			c == "prov_mac_address" && !d.OldSchema || !d.has(tbl, c) {
			continue
		}
		names = append(names, "`"+c+"`")
		marks = append(marks, "?")
		args = append(args, vals[i])
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO "+tbl+" ("+strings.Join(names, ", ")+") VALUES ("+strings.Join(marks, ", ")+")", args...)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", tbl, err)
	}
	return nil
}

func b2i(b bool, id int64) int64 {
	if b {
		return id // Nova marks a soft-deleted row with its id
	}
	return 0
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// WriteBareMetal creates nova_bm's tables in db and fills them.
func (d Deployment) WriteBareMetal(ctx context.Context, db *sql.DB) error {
	return d.write(ctx, db, "nova_bm", func(tx *sql.Tx) error {
		for _, n := range d.Nodes {
			if err := d.insert(ctx, tx, "bm_nodes",
				[]string{"id", "uuid", "service_host", "instance_uuid", "instance_name", "cpus", "memory_mb", "local_gb",
					"pm_address", "pm_user", "pm_password", "terminal_port", "prov_mac_address", "preserve_ephemeral", "deleted"},
				[]any{n.ID, n.UUID, n.Host, nullable(n.InstanceUUID), nullable(n.InstanceName), n.CPUs, n.MemoryMB, n.LocalGB,
					nullable(n.PMAddress), n.PMUser, n.PMPassword, n.TerminalPort, nullable(n.ProvMAC), false, b2i(n.Deleted, n.ID)}); err != nil {
				return err
			}
			for _, i := range n.Ifaces {
				if err := d.insert(ctx, tx, "bm_interfaces", []string{"id", "bm_node_id", "address", "vif_uuid", "deleted"},
					[]any{i.ID, n.ID, i.MAC, nullable(i.VIF), b2i(i.Deleted, i.ID)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// WriteNova creates nova's tables in db and fills them.
func (d Deployment) WriteNova(ctx context.Context, db *sql.DB) error {
	return d.write(ctx, db, "nova", func(tx *sql.Tx) error {
		specID := int64(0)
		for _, f := range d.Flavors {
			if err := d.insert(ctx, tx, "instance_types",
				[]string{"id", "name", "memory_mb", "vcpus", "root_gb", "ephemeral_gb", "swap", "flavorid", "rxtx_factor", "is_public", "deleted"},
				[]any{f.ID, f.Name, f.MemoryMB, f.VCPUs, f.RootGB, f.EphGB, f.Swp, f.FlavorID, 1.0, true, b2i(f.Deleted, f.ID)}); err != nil {
				return err
			}
			for _, k := range sortedKeys(f.Specs) {
				specID++
				if err := d.insert(ctx, tx, "instance_type_extra_specs", []string{"id", "instance_type_id", "key", "value", "deleted"},
					[]any{specID, f.ID, k, f.Specs[k], 0}); err != nil {
					return err
				}
			}
		}
		for k, in := range d.Instances {
			id := int64(k + 1)
			if err := d.insert(ctx, tx, "instances",
				[]string{"id", "uuid", "display_name", "hostname", "host", "node", "vm_state", "power_state", "image_ref",
					"instance_type_id", "project_id", "user_id", "deleted"},
				[]any{id, in.UUID, in.Name, in.Name, in.Host, in.Node, in.VMState, 1, in.ImageRef, in.TypeID, in.Project, in.User,
					b2i(in.Deleted, id)}); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d Deployment) write(ctx context.Context, db *sql.DB, dbName string, fill func(*sql.Tx) error) error {
	for _, stmt := range d.ddl(dbName) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %s: %w", dbName, stmt, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fill(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// OpenSQLite opens (creating) a SQLite file for writing a fixture.
func OpenSQLite(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
