package nova

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/api/core"
)

// The view tables are well formed: every range lies within the
// microversions corral answers to and is not empty, every view has
// fields, and the rows of one field (one per shape) never overlap in a
// view.
func TestViewTables(t *testing.T) {
	minV, _ := core.ParseMicroversion(MinVersion)
	maxV, _ := core.ParseMicroversion(MaxVersion)
	parse := func(s string) core.Microversion {
		v, err := core.ParseMicroversion(s)
		if err != nil {
			t.Fatalf("microversion %q: %v", s, err)
		}
		return v
	}
	specs := Fields()
	for resource, views := range Views() {
		for _, view := range views {
			n := 0
			for _, f := range specs {
				if f.Resource == resource && slices.Contains(f.Views, view) {
					n++
				}
			}
			if n == 0 {
				t.Errorf("view %s of %s has no field", view, resource)
			}
		}
	}
	until := func(f FieldSpec) core.Microversion {
		if f.Until == "" {
			return maxV
		}
		return parse(f.Until)
	}
	for i, f := range specs {
		if len(f.Views) == 0 {
			t.Errorf("%s is in no view", f)
		}
		since := parse(f.Since)
		if since.Less(minV) || maxV.Less(until(f)) || until(f).Less(since) {
			t.Errorf("%s: range outside %s–%s or empty", f, MinVersion, MaxVersion)
		}
		for _, g := range specs[i+1:] {
			if g.Resource != f.Resource || g.Name != f.Name || !slices.ContainsFunc(g.Views, func(v string) bool { return slices.Contains(f.Views, v) }) {
				continue
			}
			if !until(f).Less(parse(g.Since)) && !until(g).Less(since) {
				t.Errorf("%s and %s overlap", f, g)
			}
		}
	}
}
