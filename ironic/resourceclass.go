package ironic

import (
	"slices"
	"strings"

	"github.com/corral-dev/corral/fsm"
)

// NormalizeResourceClass maps an Ironic node's resource class to its
// Placement custom resource class, as Nova does (see
// fsm.NormalizeResourceClass, the one implementation).
func NormalizeResourceClass(raw string) string { return fsm.NormalizeResourceClass(raw) }

// RawClassFor returns the raw Ironic resource class of the first node, in UUID order, whose
// normalized class equals custom (itself normalized first, so a raw class works too). Ironic
// matches allocations against the raw class verbatim, so this is what an allocation must ask for.
func RawClassFor(custom string, nodes []Node) (string, bool) {
	want := NormalizeResourceClass(custom)
	if want == "" {
		return "", false
	}
	idx := make([]int, len(nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(nodes[a].UUID, nodes[b].UUID) })
	for _, i := range idx {
		if rc := nodes[i].ResourceClass; rc != "" && NormalizeResourceClass(rc) == want {
			return rc, true
		}
	}
	return "", false
}
