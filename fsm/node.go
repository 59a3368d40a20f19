package fsm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Node is the mirror of one Ironic node, kept by the leader's node sync.
type Node struct {
	UUID           string            `json:"uuid"`
	Name           string            `json:"name,omitempty"`
	ResourceClass  string            `json:"resource_class,omitempty"` // raw, as Ironic stores it
	ProvisionState string            `json:"provision_state"`
	PowerState     string            `json:"power_state,omitempty"`
	Maintenance    bool              `json:"maintenance"`
	Properties     map[string]string `json:"properties,omitempty"`
	Capabilities   map[string]string `json:"capabilities,omitempty"`
	Traits         []string          `json:"traits,omitempty"`
	InstanceUUID   string            `json:"instance_uuid,omitempty"`
	AllocationUUID string            `json:"allocation_uuid,omitempty"`
	// Missing is set when the node was absent from Ironic's latest listing.
	// Nodes are never dropped on one listing (a transient failure must not
	// erase state); they are marked.
	Missing  bool      `json:"missing,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// InventoryConflict is why Placement refused the node provider's
	// latest inventory (e.g. standard classes still in use); retried at
	// every sync until it clears.
	InventoryConflict string `json:"inventory_conflict,omitempty"`
	// ConflictSince is when the conflict appeared (the leader reports it
	// once, for the entry that recorded it).
	ConflictSince time.Time `json:"conflict_since,omitzero"`
}

func cloneNode(n Node) Node {
	n.Properties = maps.Clone(n.Properties)
	n.Capabilities = maps.Clone(n.Capabilities)
	n.Traits = slices.Clone(n.Traits)
	return n
}

// SameObservation reports whether two mirror entries describe the same
// Ironic state (LastSeen and Missing aside).
func (n Node) SameObservation(o Node) bool {
	return n.UUID == o.UUID && n.Name == o.Name && n.ResourceClass == o.ResourceClass &&
		n.ProvisionState == o.ProvisionState && n.PowerState == o.PowerState &&
		n.Maintenance == o.Maintenance && maps.Equal(n.Properties, o.Properties) &&
		maps.Equal(n.Capabilities, o.Capabilities) && slices.Equal(n.Traits, o.Traits) &&
		n.InstanceUUID == o.InstanceUUID && n.AllocationUUID == o.AllocationUUID
}

// Available reports whether the node can take a new instance.
func (n Node) Available() bool {
	return !n.Missing && !n.Maintenance && n.ProvisionState == "available" &&
		n.PowerState != "" && n.InstanceUUID == "" && n.AllocationUUID == ""
}

// SyncNodes carries the changes of one Ironic listing: nodes new or
// changed, and nodes that were absent.
type SyncNodes struct {
	Meta
	Upserts []Node   `json:"upserts,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// LegacyInventory, when set, switches the reporting of standard
	// classes by node providers on or off (the leader's configuration).
	LegacyInventory *bool `json:"legacy_inventory,omitempty"`
}

// Type implements Command.
func (*SyncNodes) Type() CommandType { return CmdSyncNodes }

func init() {
	register[SyncNodes](CmdSyncNodes, "SyncNodes", applySyncNodes)
	registerRecord(RecordNode, recordSpec{name: "node", write: writeNodeRecords, load: loadNodeRecord})
}

func applySyncNodes(st *state, c *SyncNodes) (any, error) {
	for _, n := range c.Upserts {
		if n.UUID == "" {
			return nil, fmt.Errorf("%w: node without uuid in sync", ErrInvalid)
		}
	}
	at := c.At.UTC()
	touched := map[string]bool{}
	for _, n := range c.Upserts {
		n = st.share.node(n)
		n.Missing = false
		n.LastSeen = at
		n.InventoryConflict = st.nodes[n.UUID].InventoryConflict
		n.ConflictSince = st.nodes[n.UUID].ConflictSince
		st.nodes[n.UUID] = n
		touched[n.UUID] = true
	}
	for _, id := range c.Missing {
		if n, ok := st.nodes[id]; ok && !n.Missing {
			n.Missing = true
			st.nodes[id] = n
			touched[id] = true
		}
	}
	all := c.LegacyInventory != nil && *c.LegacyInventory != st.legacyInventory
	if c.LegacyInventory != nil {
		st.legacyInventory = *c.LegacyInventory
	}
	// Reconcile, in UUID order, the nodes this entry touched and those
	// holding a conflict (retried at every sync), or every node when the
	// legacy switch flipped. Reconciling a node changes only that node, so
	// the set can be gathered first. The conflicted nodes come from
	// st.conflicted, which holds every one of them (and maybe some whose
	// conflict cleared elsewhere, dropped here): an entry costs its own
	// nodes and the conflicted ones, not the whole mirror.
	var ids []string
	if all {
		ids = sortedKeys(st.nodes)
	} else {
		ids = make([]string, 0, len(touched)+len(st.conflicted))
		for id := range touched {
			ids = append(ids, id)
		}
		for id := range st.conflicted {
			if touched[id] {
				continue
			}
			if st.nodes[id].InventoryConflict != "" {
				ids = append(ids, id)
			} else {
				delete(st.conflicted, id)
			}
		}
		slices.Sort(ids)
	}
	for _, id := range ids {
		reconcileNodeProvider(st, id, at)
		if st.nodes[id].InventoryConflict != "" {
			st.conflicted[id] = struct{}{}
		} else {
			delete(st.conflicted, id)
		}
	}
	return len(c.Upserts) + len(c.Missing), nil
}

func writeNodeRecords(st *state, emit func(v any) error) error {
	for _, id := range sortedKeys(st.nodes) {
		if err := emit(st.nodes[id]); err != nil {
			return err
		}
	}
	return nil
}

func loadNodeRecord(st *state, body []byte) error {
	var n Node
	if err := json.Unmarshal(body, &n); err != nil {
		return err
	}
	return addLoadedNode(st, n)
}

// NormalizeResourceClass spells an Ironic resource class the way
// Placement does: upper case, every character outside [A-Z0-9_] replaced
// by '_', with the CUSTOM_ prefix ("baremetal-gold" → "CUSTOM_BAREMETAL_GOLD").
// An empty class stays empty; the mapping is idempotent.
func NormalizeResourceClass(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(raw) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_') // one per character, not per byte
		}
	}
	s := b.String()
	if !strings.HasPrefix(s, "CUSTOM_") {
		s = "CUSTOM_" + s
	}
	return s
}

// Nodes returns the Ironic node mirror, sorted by UUID.
func (s *Store) Nodes() []Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Node, 0, len(s.st.nodes))
	for _, id := range sortedKeys(s.st.nodes) {
		out = append(out, cloneNode(s.st.nodes[id]))
	}
	return out
}

// Node returns one mirrored node or an error wrapping ErrNotFound.
func (s *Store) Node(uuid string) (Node, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.st.nodes[uuid]
	if !ok {
		return Node{}, errNodeNotFound(uuid)
	}
	return cloneNode(n), nil
}

func errNodeNotFound(uuid string) error {
	return wrapNotFound("Ironic node " + uuid + " is not in the mirror: it may not be synced yet")
}

// NodeObserved reports whether the mirror holds n as observed: mirrored,
// not marked missing, and n.SameObservation of it. It copies nothing, so
// that the node sync can compare a listing of 10^5 nodes with the mirror
// without a copy of it.
func (s *Store) NodeObserved(n Node) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	old, ok := s.st.nodes[n.UUID]
	return ok && !old.Missing && old.SameObservation(n)
}

// PresentNodeIDs returns the UUIDs of the mirrored nodes that are not
// marked missing, in no particular order.
func (s *Store) PresentNodeIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.st.nodes))
	for id, n := range s.st.nodes {
		if !n.Missing {
			out = append(out, id)
		}
	}
	return out
}

// ConflictedNodeIDs returns the UUIDs of the mirrored nodes that hold an
// inventory conflict, sorted.
func (s *Store) ConflictedNodeIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for id := range s.st.conflicted {
		if s.st.nodes[id].InventoryConflict != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// NodeConflict returns the inventory conflict of a mirrored node and when
// it appeared ("" when it has none), and whether the node is mirrored.
func (s *Store) NodeConflict(uuid string) (reason string, since time.Time, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.st.nodes[uuid]
	return n.InventoryConflict, n.ConflictSince, ok
}

// NodeClass is the bare-metal capacity of one Ironic resource class.
type NodeClass struct {
	IronicClass                    string // as Ironic spells it
	Total, Free, Used, Unavailable int
}

// NodeCapacity counts the mirrored nodes of each resource class, sorted
// by class: used (reserved by a server, or holding an instance or an
// allocation in Ironic), free (Available) or unavailable. It copies no
// node: GET /v1/hosts and every scrape of the metrics read it, and a
// copy of 10^5 nodes was some 45 MB of garbage each time.
func (s *Store) NodeCapacity() []NodeClass {
	s.mu.RLock()
	defer s.mu.RUnlock()
	by := map[string]*NodeClass{}
	for id, n := range s.st.nodes {
		c := by[n.ResourceClass]
		if c == nil {
			c = &NodeClass{IronicClass: n.ResourceClass}
			by[n.ResourceClass] = c
		}
		c.Total++
		switch {
		case s.st.reservations[id] != "" || n.InstanceUUID != "" || n.AllocationUUID != "":
			c.Used++
		case n.Available():
			c.Free++
		default:
			c.Unavailable++
		}
	}
	out := make([]NodeClass, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b NodeClass) int { return strings.Compare(a.IronicClass, b.IronicClass) })
	return out
}
