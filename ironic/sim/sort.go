package sim

import (
	"iter"
	"slices"
	"strings"
	"time"
)

// nodeUnsortable are the node fields Ironic's API refuses as sort_key.
var nodeUnsortable = []string{"properties", "driver_info", "extra", "instance_info", "driver_internal_info",
	"clean_step", "deploy_step", "raid_config", "target_raid_config", "traits", "network_data"}

// sortValue is a node's value of a sort key; null sorts before every value, as in
// Ironic's SQLite and MySQL databases, or after with Options.NullsLast (PostgreSQL).
// Times compare at Ironic's precision (microseconds).
type sortValue struct {
	v    string
	t    time.Time
	null bool
}

func strSort(p *string) sortValue {
	if p == nil {
		return sortValue{null: true}
	}
	return sortValue{v: *p}
}

func timeSort(t time.Time) sortValue {
	if t.IsZero() {
		return sortValue{null: true}
	}
	return sortValue{t: t.Truncate(time.Microsecond)}
}

// nodeSortKeys are the sort keys the simulator orders by (Ironic accepts any column; the
// others are answered like an unknown column). "id" is the creation order.
var nodeSortKeys = map[string]func(*node) sortValue{
	"uuid":                 func(n *node) sortValue { return sortValue{v: n.uuid} },
	"name":                 func(n *node) sortValue { return sortValue{v: n.name, null: n.name == ""} },
	"created_at":           func(n *node) sortValue { return timeSort(n.created) },
	"updated_at":           func(n *node) sortValue { return timeSort(n.updated) },
	"provision_updated_at": func(n *node) sortValue { return timeSort(n.provisionUpdated) },
	"provision_state":      func(n *node) sortValue { return sortValue{v: n.provisionState} },
	"power_state":          func(n *node) sortValue { return strSort(n.powerState) },
	"instance_uuid":        func(n *node) sortValue { return strSort(n.instanceUUID) },
	"resource_class":       func(n *node) sortValue { return strSort(n.resourceClass) },
	"driver":               func(n *node) sortValue { return sortValue{v: n.driver} },
}

func (a sortValue) compare(b sortValue, nullsLast bool) int {
	null := -1
	if nullsLast {
		null = 1
	}
	switch {
	case a.null && b.null:
		return 0
	case a.null:
		return null
	case b.null:
		return -null
	}
	if c := a.t.Compare(b.t); c != 0 {
		return c
	}
	return strings.Compare(a.v, b.v)
}

// keyedNode is a node with its value of the listing's sort key.
type keyedNode struct {
	n *node
	k sortValue
}

// sorted yields the nodes ordered by key then id, both in dir, as Ironic does. Caller
// holds s.mu.
func (st *nodeStore) sorted(key, dir string, nullsLast bool) iter.Seq[keyedNode] {
	f := nodeSortKeys[key]
	if f == nil { // by id: the creation order
		return func(yield func(keyedNode) bool) {
			for i := range st.order {
				if dir == "desc" {
					i = len(st.order) - 1 - i
				}
				if !yield(keyedNode{n: st.order[i]}) {
					return
				}
			}
		}
	}
	out := make([]keyedNode, len(st.order))
	for i, n := range st.order {
		out[i] = keyedNode{n: n, k: f(n)}
	}
	slices.SortStableFunc(out, func(a, b keyedNode) int { return a.k.compare(b.k, nullsLast) })
	if dir == "desc" {
		slices.Reverse(out)
	}
	return slices.Values(out)
}

// afterMarker reports whether k comes after the marker m (whose key is mk) in a listing by
// key and dir, with the criteria Ironic's pagination (oslo.db) builds: (key beyond the
// marker's) or (key equal and id beyond), where a null never compares, and a null marker
// key reduces them to (id beyond) alone. So after a marker with a key, nodes whose key is
// null never come; after a marker without one, only the nodes of lower (desc) or higher
// (asc) id do, whatever their key.
func afterMarker(k keyedNode, m *node, mk sortValue, key, dir string) bool {
	beyond := func(c int) bool { return (dir == "asc" && c > 0) || (dir == "desc" && c < 0) }
	idBeyond := beyond(cmpInt(k.n.id, m.id))
	if key == "id" || mk.null {
		return idBeyond
	}
	if k.k.null {
		return false
	}
	c := k.k.compare(mk, false) // neither is null
	return beyond(c) || (c == 0 && idBeyond)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
