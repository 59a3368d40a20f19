package novabm

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// BMNode is one row of nova_bm.bm_nodes with its interfaces.
type BMNode struct {
	ID int64
	// UUID is the row's uuid, or, for schemas without the column, a uuid
	// derived from the id (DerivedUUID), the same on every run.
	UUID              string
	UUIDDerived       bool
	ServiceHost       string
	InstanceUUID      string
	InstanceName      string
	CPUs              int64
	MemoryMB          int64
	LocalGB           int64
	PMAddress         string
	PMUser            string
	PMPassword        string
	TerminalPort      int64
	TaskState         string
	RootMB            int64
	SwapMB            int64
	EphemeralMB       int64
	PreserveEphemeral bool
	ImagePath         string
	PXEConfigPath     string
	DeployKey         string
	ProvMAC           string // older schemas: the provisioning NIC
	Deleted           bool
	Interfaces        []BMInterface
}

// BMInterface is one row of nova_bm.bm_interfaces.
type BMInterface struct {
	ID         int64
	NodeID     int64
	Address    string // lower case
	DatapathID string
	PortNo     int64
	VIFUUID    string
	Deleted    bool
}

// BareMetal is what nova_bm holds.
type BareMetal struct {
	Nodes  []BMNode // every row, soft-deleted ones included, by id
	Schema Schema
}

// Instance is one live row of nova.instances.
type Instance struct {
	UUID           string
	DisplayName    string
	Hostname       string
	Host           string
	Node           string
	VMState        string
	PowerState     int64
	ImageRef       string
	InstanceTypeID int64
	ProjectID      string
	UserID         string
}

// NovaFlavor is one row of nova.instance_types with its extra specs.
type NovaFlavor struct {
	ID          int64 // the row id (instances.instance_type_id)
	FlavorID    string
	Name        string
	MemoryMB    int64
	VCPUs       int64
	RootGB      int64
	EphemeralGB int64
	SwapMB      int64
	RxTxFactor  float64
	IsPublic    bool
	Deleted     bool
	ExtraSpecs  map[string]string
}

// Nova is what the nova database holds for the migration.
type Nova struct {
	Instances []Instance           // live rows, by uuid
	Flavors   map[int64]NovaFlavor // by row id, deleted ones included (instances keep them)
	Schema    Schema
}

// uuidNamespace derives node uuids for schemas that have none.
var uuidNamespace = uuid.MustParse("5b0c7d1e-2f0a-5c8e-9a43-6e0b1d2c3f47")

// DerivedUUID is the uuid given to bm node id when the schema has no uuid
// column: the same on every run, so a rerun finds the node it created.
func DerivedUUID(id int64) string {
	return uuid.NewSHA1(uuidNamespace, []byte("nova_bm/bm_nodes/"+strconv.FormatInt(id, 10))).String()
}

// ReadBareMetal detects the nova_bm schema and reads every node and
// interface. name labels the database in messages.
func ReadBareMetal(ctx context.Context, db *sql.DB, name string) (BareMetal, error) {
	var bm BareMetal
	for _, t := range []table{tableBMNodes, tableBMInterfaces} {
		if err := detect(ctx, db, name, t, &bm.Schema); err != nil {
			return BareMetal{}, err
		}
	}
	rows, err := selectAll(ctx, db, name, bm.Schema, tableBMNodes.name)
	if err != nil {
		return BareMetal{}, err
	}
	byID := map[int64]int{}
	for _, r := range rows {
		n, err := parseBMNode(r)
		if err != nil {
			return BareMetal{}, fmt.Errorf("%w: %s: bm_nodes: %w", ErrUnreadable, name, err)
		}
		byID[n.ID] = len(bm.Nodes)
		bm.Nodes = append(bm.Nodes, n)
	}
	ifs, err := selectAll(ctx, db, name, bm.Schema, tableBMInterfaces.name)
	if err != nil {
		return BareMetal{}, err
	}
	for _, r := range ifs {
		i, err := parseBMInterface(r)
		if err != nil {
			return BareMetal{}, fmt.Errorf("%w: %s: bm_interfaces: %w", ErrUnreadable, name, err)
		}
		if k, ok := byID[i.NodeID]; ok {
			bm.Nodes[k].Interfaces = append(bm.Nodes[k].Interfaces, i)
		}
	}
	sort.Slice(bm.Nodes, func(a, b int) bool { return bm.Nodes[a].ID < bm.Nodes[b].ID })
	for k := range bm.Nodes {
		sort.Slice(bm.Nodes[k].Interfaces, func(a, b int) bool { return bm.Nodes[k].Interfaces[a].ID < bm.Nodes[k].Interfaces[b].ID })
	}
	return bm, nil
}

// ReadNova detects the nova schema and reads the live instances and every
// flavor with its extra specs.
func ReadNova(ctx context.Context, db *sql.DB, name string) (Nova, error) {
	nv := Nova{Flavors: map[int64]NovaFlavor{}}
	for _, t := range []table{tableInstances, tableInstanceTypes, tableExtraSpecs} {
		if err := detect(ctx, db, name, t, &nv.Schema); err != nil {
			return Nova{}, err
		}
	}
	rows, err := selectAll(ctx, db, name, nv.Schema, tableInstanceTypes.name)
	if err != nil {
		return Nova{}, err
	}
	for _, r := range rows {
		f, err := parseFlavor(r)
		if err != nil {
			return Nova{}, fmt.Errorf("%w: %s: instance_types: %w", ErrUnreadable, name, err)
		}
		nv.Flavors[f.ID] = f
	}
	specs, err := selectAll(ctx, db, name, nv.Schema, tableExtraSpecs.name)
	if err != nil {
		return Nova{}, err
	}
	for _, r := range specs {
		if deleted(r["deleted"]) {
			continue
		}
		id, err := intField(r, "instance_type_id")
		if err != nil {
			return Nova{}, fmt.Errorf("%w: %s: instance_type_extra_specs: %w", ErrUnreadable, name, err)
		}
		if f, ok := nv.Flavors[id]; ok {
			f.ExtraSpecs[r["key"]] = r["value"]
		}
	}
	insts, err := selectAll(ctx, db, name, nv.Schema, tableInstances.name)
	if err != nil {
		return Nova{}, err
	}
	for _, r := range insts {
		if deleted(r["deleted"]) {
			continue
		}
		in, err := parseInstance(r)
		if err != nil {
			return Nova{}, fmt.Errorf("%w: %s: instances: %w", ErrUnreadable, name, err)
		}
		nv.Instances = append(nv.Instances, in)
	}
	sort.Slice(nv.Instances, func(a, b int) bool { return nv.Instances[a].UUID < nv.Instances[b].UUID })
	return nv, nil
}

// deleted reads Nova's soft-delete column: 0 (or absent) is live; older
// schemas used a boolean, newer ones the row id.
func deleted(v string) bool { return truthy(v) }

// truthy reads a boolean column as either database stores it.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false", "f":
		return false
	}
	return true
}

func intField(r record, col string) (int64, error) {
	v, ok := r[col]
	if !ok || strings.TrimSpace(v) == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		// Some MySQL columns come back as decimals ("8.0").
		f, ferr := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if ferr != nil {
			return 0, fmt.Errorf("column %s: %q is not a number", col, v)
		}
		n = int64(f)
	}
	return n, nil
}

func parseBMNode(r record) (BMNode, error) {
	var n BMNode
	var err error
	ints := []struct {
		col string
		dst *int64
	}{{"id", &n.ID}, {"cpus", &n.CPUs}, {"memory_mb", &n.MemoryMB}, {"local_gb", &n.LocalGB},
		{"terminal_port", &n.TerminalPort}, {"root_mb", &n.RootMB}, {"swap_mb", &n.SwapMB}, {"ephemeral_mb", &n.EphemeralMB}}
	for _, f := range ints {
		if *f.dst, err = intField(r, f.col); err != nil {
			return BMNode{}, fmt.Errorf("row %s: %w", r["id"], err)
		}
	}
	n.UUID = strings.ToLower(strings.TrimSpace(r["uuid"]))
	if n.UUID == "" {
		n.UUID, n.UUIDDerived = DerivedUUID(n.ID), true
	}
	n.ServiceHost, n.InstanceUUID, n.InstanceName = r["service_host"], strings.ToLower(strings.TrimSpace(r["instance_uuid"])), r["instance_name"]
	n.PMAddress, n.PMUser, n.PMPassword = strings.TrimSpace(r["pm_address"]), r["pm_user"], r["pm_password"]
	n.TaskState, n.ImagePath, n.PXEConfigPath, n.DeployKey = r["task_state"], r["image_path"], r["pxe_config_path"], r["deploy_key"]
	n.PreserveEphemeral = truthy(r["preserve_ephemeral"])
	n.ProvMAC = strings.ToLower(strings.TrimSpace(r["prov_mac_address"]))
	n.Deleted = deleted(r["deleted"])
	return n, nil
}

func parseBMInterface(r record) (BMInterface, error) {
	var i BMInterface
	var err error
	if i.ID, err = intField(r, "id"); err != nil {
		return i, err
	}
	if i.NodeID, err = intField(r, "bm_node_id"); err != nil {
		return i, err
	}
	if i.PortNo, err = intField(r, "port_no"); err != nil {
		return i, err
	}
	i.Address = strings.ToLower(strings.TrimSpace(r["address"]))
	i.DatapathID, i.VIFUUID = r["datapath_id"], r["vif_uuid"]
	i.Deleted = deleted(r["deleted"])
	return i, nil
}

func parseInstance(r record) (Instance, error) {
	in := Instance{UUID: strings.ToLower(strings.TrimSpace(r["uuid"])), DisplayName: r["display_name"], Hostname: r["hostname"],
		Host: r["host"], Node: strings.TrimSpace(r["node"]), VMState: r["vm_state"], ImageRef: r["image_ref"],
		ProjectID: r["project_id"], UserID: r["user_id"]}
	var err error
	if in.PowerState, err = intField(r, "power_state"); err != nil {
		return in, err
	}
	if in.InstanceTypeID, err = intField(r, "instance_type_id"); err != nil {
		return in, err
	}
	return in, nil
}

func parseFlavor(r record) (NovaFlavor, error) {
	f := NovaFlavor{FlavorID: r["flavorid"], Name: r["name"], IsPublic: true, RxTxFactor: 1, ExtraSpecs: map[string]string{}}
	var err error
	ints := []struct {
		col string
		dst *int64
	}{{"id", &f.ID}, {"memory_mb", &f.MemoryMB}, {"vcpus", &f.VCPUs}, {"root_gb", &f.RootGB},
		{"ephemeral_gb", &f.EphemeralGB}, {"swap", &f.SwapMB}}
	for _, c := range ints {
		if *c.dst, err = intField(r, c.col); err != nil {
			return NovaFlavor{}, fmt.Errorf("row %s: %w", r["id"], err)
		}
	}
	if v, ok := r["rxtx_factor"]; ok && v != "" {
		if f.RxTxFactor, err = strconv.ParseFloat(v, 64); err != nil {
			return NovaFlavor{}, fmt.Errorf("row %s: rxtx_factor %q is not a number", r["id"], v)
		}
	}
	if v, ok := r["is_public"]; ok {
		f.IsPublic = truthy(v)
	}
	f.Deleted = deleted(r["deleted"])
	return f, nil
}
