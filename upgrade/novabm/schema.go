package novabm

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// table describes what the migration reads from one table: the columns it
// cannot do without and the ones older schemas may lack.
type table struct {
	name     string
	required []string
	optional []string
}

var (
	tableBMNodes = table{name: "bm_nodes",
		required: []string{"id", "instance_uuid", "cpus", "memory_mb", "local_gb", "pm_address", "pm_user", "pm_password"},
		optional: []string{"uuid", "service_host", "instance_name", "terminal_port", "task_state", "root_mb", "swap_mb",
			"ephemeral_mb", "preserve_ephemeral", "image_path", "pxe_config_path", "deploy_key", "prov_mac_address", "deleted"}}
	tableBMInterfaces = table{name: "bm_interfaces",
		required: []string{"id", "bm_node_id", "address"},
		optional: []string{"datapath_id", "port_no", "vif_uuid", "deleted"}}
	tableInstances = table{name: "instances",
		required: []string{"uuid", "display_name", "host", "node", "vm_state", "image_ref", "instance_type_id", "project_id", "user_id"},
		optional: []string{"hostname", "power_state", "deleted"}}
	tableInstanceTypes = table{name: "instance_types",
		required: []string{"id", "name", "memory_mb", "vcpus", "root_gb", "ephemeral_gb", "flavorid"},
		optional: []string{"swap", "rxtx_factor", "is_public", "deleted"}}
	tableExtraSpecs = table{name: "instance_type_extra_specs",
		required: []string{"instance_type_id", "key", "value"},
		optional: []string{"deleted"}}
)

// Schema is what schema detection found: per table, the columns read.
type Schema struct {
	Columns map[string][]string // table → columns present among those the migration knows
}

// Has reports whether a table has a column.
func (s Schema) Has(tbl, col string) bool { return slices.Contains(s.Columns[tbl], col) }

// detect reads a table's columns and checks the required ones.
func detect(ctx context.Context, db *sql.DB, dbName string, t table, into *Schema) error {
	rows, err := db.QueryContext(ctx, "SELECT * FROM "+t.name+" WHERE 1=0")
	if err != nil {
		if missingTable(err) {
			return fmt.Errorf("%w: %s has no table %s: is this the right database?", ErrSchema, dbName, t.name)
		}
		return fmt.Errorf("%w: %s: reading table %s: %w", ErrUnreadable, dbName, t.name, err)
	}
	cols, err := rows.Columns()
	_ = rows.Close()
	if err != nil {
		return fmt.Errorf("%w: %s: columns of %s: %w", ErrUnreadable, dbName, t.name, err)
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[strings.ToLower(c)] = true
	}
	var missing, present []string
	for _, c := range t.required {
		if have[c] {
			present = append(present, c)
		} else {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: table %s has no column %s", ErrSchema, dbName, t.name, strings.Join(missing, ", "))
	}
	for _, c := range t.optional {
		if have[c] {
			present = append(present, c)
		}
	}
	if into.Columns == nil {
		into.Columns = map[string][]string{}
	}
	into.Columns[t.name] = present
	return nil
}

// missingTable recognises "no such table" from SQLite and error 1146 from
// MySQL/MariaDB.
func missingTable(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no such table") || strings.Contains(msg, "error 1146") ||
		strings.Contains(msg, "doesn't exist")
}

// record is one row, by column name; NULL is absent.
type record map[string]string

// selectAll reads every row of a table, the known columns only, as text.
func selectAll(ctx context.Context, db *sql.DB, dbName string, s Schema, tbl string) ([]record, error) {
	cols := s.Columns[tbl]
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	q := "SELECT " + strings.Join(quoted, ", ") + " FROM " + tbl
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading %s: %w", ErrUnreadable, dbName, tbl, err)
	}
	defer rows.Close()
	var out []record
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("%w: %s: reading %s: %w", ErrUnreadable, dbName, tbl, err)
		}
		r := record{}
		for i, c := range cols {
			if vals[i].Valid {
				r[c] = vals[i].String
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: reading %s: %w", ErrUnreadable, dbName, tbl, err)
	}
	return out, nil
}

// quoteIdent quotes a column name for both MySQL and SQLite (backticks are
// accepted by both); "key" is a reserved word in MySQL.
func quoteIdent(c string) string { return "`" + c + "`" }
