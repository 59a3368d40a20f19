package novabm

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Extra spec keys of Nova's baremetal flavors.
const (
	SpecDeployKernel  = "baremetal:deploy_kernel_id"
	SpecDeployRamdisk = "baremetal:deploy_ramdisk_id"
)

// Defaults of Options.
const (
	DefaultResourceClass = "baremetal"
	DefaultDriver        = "ipmi"
)

// Options shape the plan.
type Options struct {
	ResourceClass string // Ironic resource class of every node (default "baremetal")
	Driver        string // Ironic hardware type (default "ipmi")
	// DeployKernel and DeployRamdisk are Ironic's deploy images for nodes
	// whose instance's flavor names none (free nodes, above all).
	DeployKernel, DeployRamdisk string
	// CorralFlavors are the extra specs of corral's flavors by flavor id,
	// read before planning: a flavor updated by baremetal-flavor-update
	// names Ironic's deploy images, which take precedence over nova's.
	CorralFlavors map[string]map[string]string
}

func (o Options) withDefaults() Options {
	if o.ResourceClass == "" {
		o.ResourceClass = DefaultResourceClass
	}
	if o.Driver == "" {
		o.Driver = DefaultDriver
	}
	return o
}

// PortPlan is one port to create.
type PortPlan struct {
	Address string
	Extra   map[string]any
}

// InstancePlan is a deployed instance to adopt.
type InstancePlan struct {
	UUID         string
	Name         string
	ImageRef     string
	ProjectID    string
	UserID       string
	OldHost      string
	Flavor       wire.AdoptedFlavor // embedded in the corral server
	InstanceInfo map[string]any     // Ironic instance_info
}

// NodePlan is what one live bm node becomes.
type NodePlan struct {
	BMID          int64
	UUID          string
	Driver        string
	ResourceClass string
	DriverInfo    map[string]any
	Properties    map[string]any
	Extra         map[string]any
	Ports         []PortPlan
	Instance      *InstancePlan // nil: a free node, made available
}

// Skip is a row the migration leaves alone, and why.
type Skip struct {
	Kind   string // "node" or "instance"
	ID     string // bm node id or instance uuid
	Reason string
}

// Plan is the whole migration, computed from the databases alone.
type Plan struct {
	Nodes   []NodePlan
	Skipped []Skip
	Notes   []string // things the operator should know (nothing is skipped for them)
}

// Deployed returns the number of nodes with an instance.
func (p Plan) Deployed() int {
	n := 0
	for _, np := range p.Nodes {
		if np.Instance != nil {
			n++
		}
	}
	return n
}

// adoptable vm_states: the instance is deployed and its node holds it.
var adoptable = map[string]bool{"active": true, "stopped": true}

// BuildPlan decides, for every row, what it becomes or why it is skipped.
// It has no side effects and depends only on its inputs.
func BuildPlan(bm BareMetal, nv Nova, opts Options) Plan {
	opts = opts.withDefaults()
	var p Plan
	skipNode := map[int64]string{}
	skipInst := map[string]string{}

	live := make([]BMNode, 0, len(bm.Nodes))
	anyByKey := map[string]BMNode{} // uuid or id (live and deleted) → row
	bmHosts := map[string]bool{}
	for _, n := range bm.Nodes {
		anyByKey[n.UUID] = n
		anyByKey[strconv.FormatInt(n.ID, 10)] = n
		if n.ServiceHost != "" {
			bmHosts[n.ServiceHost] = true
		}
		if !n.Deleted {
			live = append(live, n)
		}
	}
	liveByUUID := map[string][]int64{}
	for _, n := range live {
		liveByUUID[n.UUID] = append(liveByUUID[n.UUID], n.ID)
	}

	// Node-level checks.
	macOwners := map[string][]int64{}
	for _, n := range live {
		switch {
		case n.PMAddress == "":
			skipNode[n.ID] = "no pm_address: Ironic cannot manage the node's power; set bm_nodes.pm_address and run again"
		case len(liveByUUID[n.UUID]) > 1:
			skipNode[n.ID] = fmt.Sprintf("uuid %s is shared by bm nodes %s", n.UUID, joinIDs(liveByUUID[n.UUID]))
		}
		if _, err := uuid.Parse(n.UUID); err != nil && skipNode[n.ID] == "" {
			skipNode[n.ID] = fmt.Sprintf("uuid %q is not a UUID", n.UUID)
		}
		for _, mac := range nodeMACs(n) {
			if hw, err := net.ParseMAC(mac); err != nil || len(hw) != 6 {
				if skipNode[n.ID] == "" {
					skipNode[n.ID] = fmt.Sprintf("interface address %q is not a MAC address", mac)
				}
				continue
			}
			macOwners[mac] = appendUnique(macOwners[mac], n.ID)
		}
	}
	for _, mac := range sortedKeys(macOwners) {
		owners := macOwners[mac]
		if len(owners) < 2 {
			continue
		}
		for _, id := range owners {
			if skipNode[id] == "" {
				skipNode[id] = fmt.Sprintf("duplicate MAC %s (on bm nodes %s): Ironic allows one port per MAC; remove the wrong interface row and run again",
					mac, joinIDs(owners))
			}
		}
	}

	// Instances: which are bare-metal, and on which node.
	instByUUID := map[string]Instance{}
	nodeInst := map[int64]string{} // bm id → instance uuid
	for _, in := range nv.Instances {
		instByUUID[in.UUID] = in
	}
	for _, n := range live {
		if n.InstanceUUID != "" {
			nodeInst[n.ID] = n.InstanceUUID
		}
	}
	for _, in := range nv.Instances {
		var node *BMNode
		for i := range live {
			if live[i].InstanceUUID == in.UUID {
				node = &live[i]
				break
			}
		}
		named, namesBM := anyByKey[in.Node]
		if node == nil && !namesBM && !bmHosts[in.Host] {
			continue // not a bare-metal instance
		}
		switch {
		case node == nil && namesBM && named.Deleted:
			skipInst[in.UUID] = fmt.Sprintf("its node row (bm node %d) is soft-deleted", named.ID)
			continue
		case node == nil && namesBM && named.InstanceUUID != "" && named.InstanceUUID != in.UUID:
			skipInst[in.UUID] = fmt.Sprintf("its node (bm node %d) holds instance %s", named.ID, named.InstanceUUID)
			continue
		case node == nil && namesBM:
			skipInst[in.UUID] = fmt.Sprintf("its node (bm node %d) does not name it in bm_nodes.instance_uuid", named.ID)
			continue
		case node == nil:
			skipInst[in.UUID] = fmt.Sprintf("its node row is gone (instances.node = %q on old host %s)", in.Node, in.Host)
			continue
		case namesBM && named.ID != node.ID:
			skipInst[in.UUID] = fmt.Sprintf("instances.node names bm node %d but bm node %d holds it", named.ID, node.ID)
			skipNode[node.ID] = firstNonEmpty(skipNode[node.ID], "its instance "+in.UUID+" names another node")
			continue
		}
		if r := instanceProblem(in, nv); r != "" {
			skipInst[in.UUID] = r
			skipNode[node.ID] = firstNonEmpty(skipNode[node.ID], "its instance "+in.UUID+" cannot be adopted: "+r)
		}
	}
	// A node naming an instance nova does not have is deployed for nobody
	// we know: neither free nor adoptable.
	for _, n := range live {
		if id := nodeInst[n.ID]; id != "" {
			if _, ok := instByUUID[id]; !ok && skipNode[n.ID] == "" {
				skipNode[n.ID] = fmt.Sprintf("bm_nodes.instance_uuid names %s, which nova does not have (deleted?): clear it if the node is free", id)
			}
		}
	}
	// An instance whose node is skipped is skipped with it, and the reverse.
	for _, n := range live {
		id := nodeInst[n.ID]
		if id == "" {
			continue
		}
		if r := skipNode[n.ID]; r != "" && skipInst[id] == "" {
			if _, ok := instByUUID[id]; ok {
				skipInst[id] = fmt.Sprintf("its node (bm node %d) cannot be migrated: %s", n.ID, r)
			}
		}
	}

	kernelFree, ramdiskFree := opts.DeployKernel, opts.DeployRamdisk
	if kernelFree == "" || ramdiskFree == "" {
		k, r, ok := uniqueDeployImages(opts.CorralFlavors)
		if ok {
			kernelFree, ramdiskFree = firstNonEmpty(kernelFree, k), firstNonEmpty(ramdiskFree, r)
		}
	}
	noImages := 0
	for _, n := range live {
		if skipNode[n.ID] != "" {
			continue
		}
		np := NodePlan{BMID: n.ID, UUID: n.UUID, Driver: opts.Driver, ResourceClass: opts.ResourceClass,
			DriverInfo: driverInfo(n, opts.Driver), Properties: map[string]any{"cpus": n.CPUs, "memory_mb": n.MemoryMB, "local_gb": n.LocalGB},
			Extra: map[string]any{"nova_bm_id": n.ID}}
		if n.ServiceHost != "" {
			np.Extra["nova_bm_service_host"] = n.ServiceHost
		}
		for _, i := range n.Interfaces {
			if i.Deleted {
				continue
			}
			extra := map[string]any{"nova_bm_interface_id": i.ID}
			if i.VIFUUID != "" {
				extra["vif_uuid"] = i.VIFUUID
			}
			if i.DatapathID != "" {
				extra["datapath_id"] = i.DatapathID
			}
			if i.PortNo != 0 {
				extra["port_no"] = i.PortNo
			}
			np.Ports = append(np.Ports, PortPlan{Address: i.Address, Extra: extra})
		}
		if n.ProvMAC != "" && !hasPort(np.Ports, n.ProvMAC) {
			np.Ports = append(np.Ports, PortPlan{Address: n.ProvMAC, Extra: map[string]any{"nova_bm_prov_mac": true}})
		}
		kernel, ramdisk := kernelFree, ramdiskFree
		if id := nodeInst[n.ID]; id != "" {
			in := instByUUID[id]
			f := nv.Flavors[in.InstanceTypeID]
			ip := &InstancePlan{UUID: in.UUID, Name: firstNonEmpty(in.DisplayName, in.Hostname, "instance-"+in.UUID[:8]),
				ImageRef: in.ImageRef, ProjectID: in.ProjectID, UserID: in.UserID, OldHost: in.Host}
			specs := f.ExtraSpecs
			if cs, ok := opts.CorralFlavors[f.FlavorID]; ok {
				specs = cs
			}
			kernel = firstNonEmpty(specs[SpecDeployKernel], opts.DeployKernel, f.ExtraSpecs[SpecDeployKernel])
			ramdisk = firstNonEmpty(specs[SpecDeployRamdisk], opts.DeployRamdisk, f.ExtraSpecs[SpecDeployRamdisk])
			ip.Flavor = EmbeddedFlavor(f, opts.ResourceClass, kernel, ramdisk)
			ip.InstanceInfo = instanceInfo(in, f, n)
			np.Instance = ip
		}
		if kernel != "" {
			np.DriverInfo["deploy_kernel"] = kernel
		}
		if ramdisk != "" {
			np.DriverInfo["deploy_ramdisk"] = ramdisk
		}
		if kernel == "" || ramdisk == "" {
			noImages++
		}
		p.Nodes = append(p.Nodes, np)
	}
	if noImages > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d node(s) get no deploy kernel/ramdisk: run baremetal-flavor-update first or pass --deploy-kernel and --deploy-ramdisk; Ironic cannot deploy them until driver_info names the images", noImages))
	}
	for _, id := range sortedKeys(skipNode) {
		p.Skipped = append(p.Skipped, Skip{Kind: "node", ID: strconv.FormatInt(id, 10), Reason: skipNode[id]})
	}
	for _, id := range sortedKeys(skipInst) {
		p.Skipped = append(p.Skipped, Skip{Kind: "instance", ID: id, Reason: skipInst[id]})
	}
	return p
}

func instanceProblem(in Instance, nv Nova) string {
	switch {
	case !adoptable[in.VMState]:
		return fmt.Sprintf("vm_state is %q: only active or stopped instances are adopted; let it settle and run again", in.VMState)
	case in.ImageRef == "":
		return "image_ref is empty"
	}
	if _, err := uuid.Parse(in.UUID); err != nil {
		return fmt.Sprintf("uuid %q is not a UUID", in.UUID)
	}
	if _, ok := nv.Flavors[in.InstanceTypeID]; !ok {
		return fmt.Sprintf("its flavor row (instance_types.id %d) is gone", in.InstanceTypeID)
	}
	return ""
}

// driverInfo is the Ironic driver_info of a bm node for a hardware type.
func driverInfo(n BMNode, driver string) map[string]any {
	prefix := "ipmi_"
	if driver != "ipmi" && driver != "fake-hardware" {
		prefix = driver + "_"
	}
	di := map[string]any{prefix + "address": n.PMAddress}
	if n.PMUser != "" {
		di[prefix+"username"] = n.PMUser
	}
	if n.PMPassword != "" {
		di[prefix+"password"] = n.PMPassword
	}
	if n.TerminalPort > 0 {
		di[prefix+"terminal_port"] = n.TerminalPort
	}
	return di
}

// instanceInfo is the Ironic instance_info of an adopted instance.
func instanceInfo(in Instance, f NovaFlavor, n BMNode) map[string]any {
	root := f.RootGB
	if root == 0 && n.RootMB > 0 {
		root = (n.RootMB + 1023) / 1024
	}
	ii := map[string]any{"image_source": in.ImageRef, "root_gb": root, "display_name": firstNonEmpty(in.DisplayName, in.Hostname)}
	if swap := firstPositive(f.SwapMB, n.SwapMB); swap > 0 {
		ii["swap_mb"] = swap
	}
	if eph := firstPositive(f.EphemeralGB, (n.EphemeralMB+1023)/1024); eph > 0 {
		ii["ephemeral_gb"] = eph
	}
	if n.PreserveEphemeral {
		ii["preserve_ephemeral"] = true
	}
	return ii
}

// BareMetalSpecs are the extra specs a bare-metal flavor needs in corral:
// one unit of the node's custom class, the standard classes zeroed, and
// Ironic's deploy images (when given).
func BareMetalSpecs(resourceClass, kernel, ramdisk string) map[string]string {
	rc := fsm.NormalizeResourceClass(resourceClass)
	s := map[string]string{"resources:" + rc: "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"}
	if kernel != "" {
		s[SpecDeployKernel] = kernel
	}
	if ramdisk != "" {
		s[SpecDeployRamdisk] = ramdisk
	}
	return s
}

// EmbeddedFlavor is a nova flavor as a bare-metal flavor of corral.
func EmbeddedFlavor(f NovaFlavor, resourceClass, kernel, ramdisk string) wire.AdoptedFlavor {
	specs := map[string]string{}
	for k, v := range f.ExtraSpecs {
		specs[k] = v
	}
	for k, v := range BareMetalSpecs(resourceClass, kernel, ramdisk) {
		specs[k] = v
	}
	out := wire.AdoptedFlavor{ID: f.FlavorID, Name: f.Name, VCPUs: int(f.VCPUs), RAM: int(f.MemoryMB), Disk: int(f.RootGB),
		Ephemeral: int(f.EphemeralGB), Swap: int(f.SwapMB), RxTxFactor: f.RxTxFactor, IsPublic: f.IsPublic, ExtraSpecs: specs}
	if out.RxTxFactor == 0 { // as corral normalizes a flavor
		out.RxTxFactor = 1.0
	}
	return out
}

// uniqueDeployImages returns the deploy kernel and ramdisk when every
// flavor naming both names the same pair.
func uniqueDeployImages(flavors map[string]map[string]string) (string, string, bool) {
	k, r := "", ""
	for _, id := range sortedKeys(flavors) {
		s := flavors[id]
		if s[SpecDeployKernel] == "" || s[SpecDeployRamdisk] == "" {
			continue
		}
		if k != "" && (k != s[SpecDeployKernel] || r != s[SpecDeployRamdisk]) {
			return "", "", false
		}
		k, r = s[SpecDeployKernel], s[SpecDeployRamdisk]
	}
	return k, r, k != ""
}

func nodeMACs(n BMNode) []string {
	var out []string
	for _, i := range n.Interfaces {
		if !i.Deleted {
			out = appendUniqueStr(out, i.Address)
		}
	}
	if n.ProvMAC != "" {
		out = appendUniqueStr(out, n.ProvMAC)
	}
	return out
}

func hasPort(ps []PortPlan, mac string) bool {
	for _, p := range ps {
		if p.Address == mac {
			return true
		}
	}
	return false
}

func appendUnique(s []int64, v int64) []int64 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func appendUniqueStr(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstPositive(vs ...int64) int64 {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
