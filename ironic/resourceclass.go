package ironic

import (
	"slices"
	"strings"
)

// customPrefix is Placement's namespace for custom resource classes.
const customPrefix = "CUSTOM_"

// NormalizeResourceClass maps an Ironic node's resource class to its Placement custom resource
// class, as Nova does: upper-case, every character outside [A-Z0-9_] replaced by '_', and the
// "CUSTOM_" prefix added unless already present ("baremetal-gold" -> "CUSTOM_BAREMETAL_GOLD").
// An empty class stays empty. The mapping is idempotent.
func NormalizeResourceClass(raw string) string {
	if raw == "" {
		return ""
	}
	up := strings.ToUpper(raw)
	var b strings.Builder
	b.Grow(len(customPrefix) + len(up))
	for _, r := range up {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if strings.HasPrefix(s, customPrefix) {
		return s
	}
	return customPrefix + s
}

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
