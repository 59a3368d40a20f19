package fsm

import (
	"bytes"

	"cmp"
	"github.com/corral-dev/corral/fsm/placement"
	"maps"
	"slices"
)

// state is everything the log builds. It has one map per entity; the file of
// each entity holds its type, commands, apply functions and snapshot records.
// Add a field here, a line in newState and clone, and a record registration
// when adding an entity.
type state struct {
	hosts        map[string]Host    // by name
	flavors      map[string]Flavor  // by ID
	flavorNames  map[string]string  // flavor name -> ID (index, rebuilt on restore)
	servers      map[string]Server  // by ID
	reservations map[string]string  // node UUID -> server ID (index, rebuilt on restore)
	nodes        map[string]Node    // Ironic node mirror, by UUID
	placement    *placement.Store   // resource providers, inventories, allocations
	keypairs     map[string]KeyPair // by user id and name (keyPairKey)
	// legacyInventory: node providers also report VCPU, MEMORY_MB and
	// DISK_GB ([workarounds] report_ironic_standard_resource_class_inventory).
	legacyInventory bool
	placementLoad   *bytes.Buffer // snapshot restore only

	// index is the log index of the entry being applied (not part of
	// snapshots): Apply records it where state remembers "when".
	index uint64
}

func newState() *state {
	return &state{
		hosts:        map[string]Host{},
		flavors:      map[string]Flavor{},
		flavorNames:  map[string]string{},
		servers:      map[string]Server{},
		reservations: map[string]string{},
		nodes:        map[string]Node{},
		placement:    placement.New(),
		keypairs:     map[string]KeyPair{},
	}
}

// clone returns a deep copy of st.
func (st *state) clone() *state {
	c := &state{
		hosts:        maps.Clone(st.hosts), // Host holds no references
		flavors:      make(map[string]Flavor, len(st.flavors)),
		flavorNames:  maps.Clone(st.flavorNames),
		servers:      make(map[string]Server, len(st.servers)),
		reservations: maps.Clone(st.reservations),
		nodes:        make(map[string]Node, len(st.nodes)),
		placement:    st.placement.Clone(),
		keypairs:     maps.Clone(st.keypairs), // KeyPair holds no references

		legacyInventory: st.legacyInventory,
	}
	for id, s := range st.servers {
		c.servers[id] = cloneServer(s)
	}
	for id, n := range st.nodes {
		c.nodes[id] = cloneNode(n)
	}
	for id, f := range st.flavors {
		c.flavors[id] = cloneFlavor(f)
	}
	return c
}

// sortedKeys returns the keys of m in ascending order, so that walks over
// state maps never depend on map iteration order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
