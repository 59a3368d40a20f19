package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/corral-dev/corral/fsm/placement"
)

// hostNamespace derives the resource provider UUID of a hypervisor host.
var hostNamespace = [16]byte{0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0x4d, 0x2a, 0xa6, 0x3f, 0x21, 0x53, 0x9c, 0x8e, 0x01, 0x77}

// HostProviderUUID is the resource provider of a hypervisor host.
func HostProviderUUID(host string) string { return uuid5(hostNamespace, "host/"+host) }

// ReportInventory is a hypervisor host reporting its resources (VCPU,
// MEMORY_MB, DISK_GB with allocation ratios) and traits.
type ReportInventory struct {
	Meta
	Host      string                         `json:"host"`
	Inventory map[string]placement.Inventory `json:"inventory"`
	Traits    []string                       `json:"traits,omitempty"`
}

// Type implements Command.
func (*ReportInventory) Type() CommandType { return CmdReportInventory }

func init() {
	register[ReportInventory](CmdReportInventory, "ReportInventory", applyReportInventory)
	registerRecord(RecordPlacement, recordSpec{name: "placement", write: writePlacementRecords, load: loadPlacementRecord})
}

// placementErr maps the placement package's errors onto the fsm's sentinels.
func placementErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, placement.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, placement.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("%w: %w", ErrConflict, err)
}

// ensureProvider creates a provider when it does not exist yet.
func ensureProvider(st *state, uuid, name string) (placement.Provider, error) {
	p, err := st.placement.Provider(uuid)
	if err == nil {
		return p, nil
	}
	return st.placement.CreateProvider(placement.Provider{UUID: uuid, Name: name})
}

func applyReportInventory(st *state, c *ReportInventory) (any, error) {
	h, ok := st.hosts[c.Host]
	if !ok {
		return nil, errHostNotFound(c.Host)
	}
	if h.Kind != KindHypervisor {
		return nil, fmt.Errorf("%w: host %s is of kind %s: only hypervisor hosts report inventory", ErrInvalid, c.Host, h.Kind)
	}
	uuid := HostProviderUUID(c.Host)
	traits := slices.Sorted(slices.Values(c.Traits))
	p, err := st.placement.Provider(uuid)
	if err != nil {
		// Each placement call either succeeds or changes nothing.
		p, err = st.placement.CreateProvider(placement.Provider{UUID: uuid, Name: c.Host, Inventories: c.Inventory, Traits: traits})
		return p, placementErr(err)
	}
	if maps.Equal(p.Inventories, c.Inventory) && slices.Equal(p.Traits, traits) {
		return p, nil
	}
	p, err = st.placement.SetInventoriesAndTraits(uuid, p.Generation, c.Inventory, traits)
	return p, placementErr(err)
}

// nodeInventory is what an Ironic node's provider reports: one unit of its
// custom class, reserved while the node cannot take an instance (and holds
// none), plus — in legacy mode — the standard classes from its properties.
func nodeInventory(n Node, legacy, inUse bool) map[string]placement.Inventory {
	rc := NormalizeResourceClass(n.ResourceClass)
	if rc == "" {
		return map[string]placement.Inventory{}
	}
	reserved := int64(0)
	if !inUse && (n.Missing || n.Maintenance || n.ProvisionState != "available" || n.InstanceUUID != "") {
		reserved = 1
	}
	inv := map[string]placement.Inventory{
		rc: {Total: 1, Reserved: reserved, MinUnit: 1, MaxUnit: 1, StepSize: 1, AllocationRatio: 1},
	}
	if legacy {
		for class, prop := range map[string]string{"VCPU": "cpus", "MEMORY_MB": "memory_mb", "DISK_GB": "local_gb"} {
			total, err := strconv.ParseInt(n.Properties[prop], 10, 64)
			if err != nil || total <= 0 {
				continue
			}
			r := int64(0)
			if reserved == 1 {
				r = total
			}
			inv[class] = placement.Inventory{Total: total, Reserved: r, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 1}
		}
	}
	return inv
}

// reconcileNodeProvider brings a node's provider in line with the mirror.
// A change Placement refuses (inventory in use) is recorded on the node
// (InventoryConflict) and retried at every later sync.
func reconcileNodeProvider(st *state, uuid string, at time.Time) {
	n, ok := st.nodes[uuid]
	if !ok {
		return
	}
	conflict := ""
	p, err := ensureProvider(st, uuid, uuid)
	if err == nil {
		// Held by a claim of any class (a VM that landed through legacy
		// standard inventory too): then the node is not "unavailable".
		usage, _ := st.placement.Usages(uuid)
		inUse := false
		for _, u := range usage {
			inUse = inUse || u > 0
		}
		inv := nodeInventory(n, st.legacyInventory, inUse)
		if !maps.Equal(p.Inventories, inv) {
			p, err = st.placement.SetInventories(uuid, p.Generation, inv)
		}
		traits := slices.Sorted(slices.Values(n.Traits))
		if err == nil && !slices.Equal(p.Traits, traits) {
			_, err = st.placement.SetTraits(uuid, p.Generation, traits)
		}
	}
	if err != nil {
		conflict = err.Error()
	}
	if n.InventoryConflict != conflict {
		if n.InventoryConflict == "" {
			n.ConflictSince = at
		}
		if conflict == "" {
			n.ConflictSince = time.Time{}
		}
		n.InventoryConflict = conflict
		st.nodes[uuid] = n
	}
}

func writePlacementRecords(st *state, emit func(v any) error) error {
	var buf bytes.Buffer
	if _, err := st.placement.WriteTo(&buf); err != nil {
		return err
	}
	for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if err := emit(rawRecord(line)); err != nil {
			return err
		}
	}
	return nil
}

func loadPlacementRecord(st *state, body []byte) error {
	if st.placementLoad == nil {
		st.placementLoad = &bytes.Buffer{}
	}
	st.placementLoad.Write(body)
	return nil
}

// finishLoad completes a snapshot restore: the placement store is decoded
// from its records once they are all read.
func (st *state) finishLoad() error {
	if st.placementLoad == nil {
		return nil
	}
	ps, err := placement.Restore(st.placementLoad)
	st.placementLoad = nil
	if err != nil {
		return err
	}
	st.placement = ps
	return nil
}

// LegacyInventory reports whether node providers report standard classes.
func (s *Store) LegacyInventory() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.legacyInventory
}

// Placement returns a copy of the placement state, for reads that need
// more than one call to be consistent.
func (s *Store) Placement() *placement.Store {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.placement.Clone()
}

// PlacementRead runs f on the live placement state under the read lock;
// f must not keep or change it.
func (s *Store) PlacementRead(f func(p *placement.Store)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f(s.st.placement)
}
