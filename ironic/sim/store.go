package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// node is the simulator's record of an Ironic node. Guarded by Server.mu.
type node struct {
	id                   int64
	uuid, name           string
	driver               string
	resourceClass        *string
	properties           map[string]any
	extra                map[string]any
	instanceInfo         map[string]any
	driverInfo           map[string]any
	driverInternalInfo   map[string]any
	instanceUUID         *string
	allocationID         int64 // 0: none
	traits               []string
	maintenance          bool
	maintenanceReason    *string
	powerState           *string
	targetPowerState     *string
	provisionState       string
	targetProvisionState *string
	lastError            *string
	description          *string
	owner, lessee        *string
	automatedClean       *bool
	vifs                 []string
	networkInterface     string          // "" is noop; flat or neutron bind VIFs to the node's ports (traits.go)
	configDrive          json.RawMessage // as sent with the deploy (Ironic masks it in instance_info)
	locked               int             // background tasks holding the node lock
	created, updated     time.Time
	provisionUpdated     time.Time
}

type port struct {
	id               int64
	uuid, address    string
	nodeID           int64
	pxeEnabled       bool
	physicalNetwork  *string
	localLinkConn    map[string]any
	extra            map[string]any
	internalInfo     map[string]any
	created, updated time.Time
	isSmartNIC       bool
	portgroupUUID    *string
}

type allocation struct {
	id            int64
	uuid, name    string
	hasName       bool
	resourceClass string
	traits        []string
	candidates    []string
	extra         map[string]any
	owner         *string
	state         string
	lastError     *string
	nodeID        int64
	created       time.Time
	updated       time.Time
}

// ordered stores keep resources in creation (id) order, which is Ironic's default sort.
type nodeStore struct {
	byUUID map[string]*node
	byName map[string]*node
	order  []*node
}

func newNodeStore() nodeStore {
	return nodeStore{byUUID: map[string]*node{}, byName: map[string]*node{}}
}

func (st *nodeStore) add(n *node) {
	st.byUUID[n.uuid] = n
	if n.name != "" {
		st.byName[n.name] = n
	}
	st.order = append(st.order, n)
}

func (st *nodeStore) remove(n *node) {
	delete(st.byUUID, n.uuid)
	if n.name != "" && st.byName[n.name] == n {
		delete(st.byName, n.name)
	}
	st.order = slices.DeleteFunc(st.order, func(x *node) bool { return x == n })
}

func (st *nodeStore) byID(id int64) *node {
	if id == 0 {
		return nil
	}
	i, ok := slices.BinarySearchFunc(st.order, id, func(n *node, id int64) int { return int(n.id - id) })
	if !ok {
		return nil
	}
	return st.order[i]
}

func (st *nodeStore) byInstance(inst string) *node {
	for _, n := range st.order {
		if n.instanceUUID != nil && strings.EqualFold(*n.instanceUUID, inst) {
			return n
		}
	}
	return nil
}

type portStore struct {
	byUUID map[string]*port
	byMAC  map[string]*port
	order  []*port
}

func newPortStore() portStore {
	return portStore{byUUID: map[string]*port{}, byMAC: map[string]*port{}}
}

func (st *portStore) add(p *port) {
	st.byUUID[p.uuid] = p
	st.byMAC[p.address] = p
	st.order = append(st.order, p)
}

func (st *portStore) remove(p *port) {
	delete(st.byUUID, p.uuid)
	delete(st.byMAC, p.address)
	st.order = slices.DeleteFunc(st.order, func(x *port) bool { return x == p })
}

type allocStore struct {
	byUUID map[string]*allocation
	byName map[string]*allocation
	order  []*allocation
}

func newAllocStore() allocStore {
	return allocStore{byUUID: map[string]*allocation{}, byName: map[string]*allocation{}}
}

func (st *allocStore) add(a *allocation) {
	st.byUUID[a.uuid] = a
	if a.hasName {
		st.byName[a.name] = a
	}
	st.order = append(st.order, a)
}

func (st *allocStore) remove(a *allocation) {
	delete(st.byUUID, a.uuid)
	if a.hasName && st.byName[a.name] == a {
		delete(st.byName, a.name)
	}
	st.order = slices.DeleteFunc(st.order, func(x *allocation) bool { return x == a })
}

func (st *allocStore) byID(id int64) *allocation {
	if id == 0 {
		return nil
	}
	for _, a := range st.order {
		if a.id == id {
			return a
		}
	}
	return nil
}

// findNode resolves a node by UUID or (from API 1.5) by name. Caller holds s.mu.
func (c *call) findNode(ident string) (*node, *apiError) {
	if isUUID(ident) {
		if n := c.s.nodes.byUUID[normUUID(ident)]; n != nil {
			return n, nil
		}
		return nil, nodeNotFound(ident)
	}
	if c.minor >= mvNodeName {
		if n := c.s.nodes.byName[ident]; n != nil {
			return n, nil
		}
	}
	return nil, nodeNotFound(ident)
}

// lockNode finds a node and waits (up to LockWait) until no background task holds its lock.
// On success s.mu is held and the caller must unlock it.
func (c *call) lockNode(ident string) (*node, *apiError) {
	deadline := time.Now().Add(c.s.opts.LockWait)
	for {
		c.s.mu.Lock()
		n, err := c.findNode(ident)
		if err != nil {
			c.s.mu.Unlock()
			return nil, err
		}
		if n.locked == 0 {
			return n, nil
		}
		uuid := n.uuid
		c.s.mu.Unlock()
		if time.Now().After(deadline) {
			return nil, nodeLocked(uuid, c.s.opts.ConductorName)
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C:
		case <-c.r.Context().Done():
			t.Stop()
			return nil, errf(http.StatusServiceUnavailable, "request cancelled")
		}
	}
}

func normUUID(s string) string {
	u, err := uuid.Parse(s)
	if err != nil {
		return strings.ToLower(s)
	}
	return u.String()
}

func strp(s string) *string { return &s }

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return deepCopy(m).(map[string]any)
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// NodeSpec describes a node to enroll directly with Seed.
type NodeSpec struct {
	UUID           string         // default: random
	Name           string         // optional, must be a valid logical name
	ResourceClass  string         // matched verbatim by allocations
	Traits         []string       // e.g. CUSTOM_GPU
	Properties     map[string]any // e.g. cpus, memory_mb, local_gb, capabilities
	ProvisionState string         // default "available"
	PowerState     string         // default "power off"; "none" leaves it null (like a fresh enroll)
	Maintenance    bool
	MACs           []string // one port per address
	// NetworkInterface is the node's network interface: "" or noop (VIFs
	// accepted and not listed), flat or neutron (each VIF takes a free
	// port of the node, as Ironic's, and a VIF beyond them is refused).
	NetworkInterface string
}

// Seed enrolls nodes directly (no API calls, no transitions) and returns their UUIDs in order.
// It panics on a duplicate UUID, name or MAC: it is meant for test setup.
func (s *Server) Seed(specs []NodeSpec) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(specs))
	for _, sp := range specs {
		id := sp.UUID
		if id == "" {
			id = uuid.NewString()
		}
		id = normUUID(id)
		if s.nodes.byUUID[id] != nil || (sp.Name != "" && s.nodes.byName[sp.Name] != nil) {
			panic(fmt.Sprintf("sim: Seed: duplicate node %s/%s", id, sp.Name))
		}
		n := newNode(s.newID(), id, sp.Name, "fake-hardware")
		if sp.ResourceClass != "" {
			n.resourceClass = strp(sp.ResourceClass)
		}
		n.traits = slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(sp.Traits)))))
		n.properties = cloneMap(sp.Properties)
		n.provisionState = "available"
		if sp.ProvisionState != "" {
			n.provisionState = sp.ProvisionState
		}
		switch sp.PowerState {
		case "":
			n.powerState = strp("power off")
		case "none":
		default:
			n.powerState = strp(sp.PowerState)
		}
		n.maintenance = sp.Maintenance
		if sp.NetworkInterface != "noop" {
			n.networkInterface = sp.NetworkInterface
		}
		if n.provisionState != "enroll" {
			n.updated = now() // brought out of enroll: Ironic stamped updated_at
		}
		s.nodes.add(n)
		for _, mac := range sp.MACs {
			mac = strings.ToLower(mac)
			if s.ports.byMAC[mac] != nil {
				panic("sim: Seed: duplicate MAC " + mac)
			}
			s.ports.add(&port{id: s.newID(), uuid: uuid.NewString(), address: mac, nodeID: n.id,
				pxeEnabled: true, created: now()})
		}
		out = append(out, id)
	}
	return out
}

// SeedNodes enrolls n ready nodes (available, power off) of resourceClass with the given traits,
// named "<prefix>-<i>" (the first i not taken) where prefix is resourceClass lowered with '_' replaced by '-'.
func (s *Server) SeedNodes(n int, resourceClass string, traits ...string) []string {
	return s.SeedWiredNodes(n, resourceClass, "", 0, traits...)
}

// SeedWiredNodes is SeedNodes for nodes of the network interface iface ("" or noop, flat,
// neutron) with ports physical ports (NICs) each, of MACs no other port of the simulator has:
// with flat or neutron each VIF takes a free one, as in Ironic.
func (s *Server) SeedWiredNodes(n int, resourceClass, iface string, ports int, traits ...string) []string {
	return s.SeedWiredNodesAs(nil, n, resourceClass, iface, ports, traits...)
}

// SeedWiredNodesAs is SeedWiredNodes with uuids for the first nodes (at most n; the rest
// random), e.g. the hosts a Neutron has a "Baremetal Node" agent for, so that it binds their
// ports. It panics on a UUID a node has, as Seed does.
func (s *Server) SeedWiredNodesAs(uuids []string, n int, resourceClass, iface string, ports int, traits ...string) []string {
	prefix := strings.ToLower(strings.ReplaceAll(resourceClass, "_", "-"))
	if prefix == "" {
		prefix = "node"
	}
	s.mu.Lock()
	macs := s.freeMACs(n * ports)
	names := make([]string, 0, n)
	for i := 0; len(names) < n; i++ {
		if name := fmt.Sprintf("%s-%d", prefix, i); s.nodes.byName[name] == nil {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	specs := make([]NodeSpec, n)
	for i := range specs {
		specs[i] = NodeSpec{Name: names[i], ResourceClass: resourceClass, Traits: traits,
			Properties:       map[string]any{"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"},
			NetworkInterface: iface, MACs: macs[i*ports : (i+1)*ports]}
		if i < len(uuids) {
			specs[i].UUID = uuids[i]
		}
	}
	return s.Seed(specs)
}

// freeMACs returns n locally administered MACs (52:54:00:..) no port has. s.mu is held.
func (s *Server) freeMACs(n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		mac := fmt.Sprintf("52:54:00:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
		if s.ports.byMAC[mac] == nil {
			out = append(out, mac)
		}
	}
	return out
}

func newNode(id int64, uuid, name, driver string) *node {
	return &node{
		id: id, uuid: uuid, name: name, driver: driver,
		properties: map[string]any{}, extra: map[string]any{}, instanceInfo: map[string]any{},
		driverInfo: map[string]any{}, driverInternalInfo: map[string]any{},
		provisionState: "enroll", traits: []string{}, created: now(),
	}
}

// Age moves the timestamps of every node (created_at, updated_at, provision_updated_at)
// d into the past, as if the nodes had been enrolled and last changed d earlier.
func (s *Server) Age(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes.order {
		for _, t := range []*time.Time{&n.created, &n.updated, &n.provisionUpdated} {
			if !t.IsZero() {
				*t = t.Add(-d)
			}
		}
	}
}

// RenameNodeAt renames a node and stamps its updated_at with at, as a change whose
// transaction took its timestamp at "at" but commits only now (a listing made in between
// did not see it). It panics on an unknown node.
func (s *Server) RenameNodeAt(ident, name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes.byUUID[normUUID(ident)]
	if n == nil {
		n = s.nodes.byName[ident]
	}
	if n == nil {
		panic("sim: RenameNodeAt: no node " + ident)
	}
	if n.name != "" {
		delete(s.nodes.byName, n.name)
	}
	n.name = name
	if name != "" {
		s.nodes.byName[name] = n
	}
	n.updated = at.UTC()
}

// NodeState is a snapshot of a node's main fields, for tests.
type NodeState struct {
	UUID, Name, ResourceClass  string
	ProvisionState, PowerState string
	TargetProvisionState       string
	InstanceUUID               string
	AllocationUUID             string
	Maintenance                bool
	Traits                     []string
	InstanceInfo               map[string]any
	VIFs                       []string
}

// Nodes returns a snapshot of all nodes in creation order.
func (s *Server) Nodes() []NodeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeState, 0, len(s.nodes.order))
	for _, n := range s.nodes.order {
		st := NodeState{UUID: n.uuid, Name: n.name, ProvisionState: n.provisionState, Maintenance: n.maintenance,
			Traits: slices.Clone(n.traits), InstanceInfo: cloneMap(n.instanceInfo), VIFs: slices.Clone(n.vifs)}
		if n.resourceClass != nil {
			st.ResourceClass = *n.resourceClass
		}
		if n.powerState != nil {
			st.PowerState = *n.powerState
		}
		if n.targetProvisionState != nil {
			st.TargetProvisionState = *n.targetProvisionState
		}
		if n.instanceUUID != nil {
			st.InstanceUUID = *n.instanceUUID
		}
		if a := s.allocs.byID(n.allocationID); a != nil {
			st.AllocationUUID = a.uuid
		}
		out = append(out, st)
	}
	return out
}
