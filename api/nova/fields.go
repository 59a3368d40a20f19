package nova

import (
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
)

// Every view of the compute API (a server, a flavor, a key pair, a
// hypervisor, a service, the absolute limits) is built from one table per
// resource: each row names a field, the microversions that carry it (from
// Since to Until, both included; Nova adds a field at one microversion and
// may drop it at a later one), the views of the resource it appears in,
// and its value. A field whose shape changes at a microversion has one row
// per shape, over ranges that do not overlap. A view shows exactly the
// rows whose range holds the request's microversion, so that a field
// cannot leak into a microversion older than the one where Nova adds it;
// Fields lists the rows for the tests that hold the views to Nova's
// schemas at every boundary.

// view is a set of the views of one resource (each resource numbers its
// own).
type view uint32

// omit is what a field's value function answers when Nova leaves the
// field out for this item (a fault only on a server in ERROR, say); such a
// row says when it is shown in When.
var omit = omitted{}

type omitted struct{}

// field is one row of a resource's table.
type field[T any] struct {
	name string
	// since and until bound the microversions that carry the field; the
	// zero until means up to MaxVersion.
	since, until core.Microversion
	in           view
	// when, for a field that is not always shown in its range, says which
	// items carry it.
	when  string
	value func(T) any
}

// table is a resource's view table.
type table[T any] struct {
	resource string
	views    []string // the names of the views, bit i named views[i]
	fields   []field[T]
}

// v2 is microversion 2.minor, for the tables.
func v2(minor int) core.Microversion { return core.Microversion{Major: 2, Minor: minor} }

// holds reports whether the field's range holds microversion mv.
func (f field[T]) holds(mv core.Microversion) bool {
	if mv.Less(f.since) {
		return false
	}
	return f.until == (core.Microversion{}) || !f.until.Less(mv)
}

// render builds view in of item at the request's microversion.
func (t *table[T]) render(c echo.Context, in view, item T) map[string]any {
	mv := microversion(c)
	out := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		if f.in&in == 0 || !f.holds(mv) {
			continue
		}
		if val := f.value(item); val != omit {
			out[f.name] = val
		}
	}
	return out
}

// FieldSpec is one row of a view table, as Fields lists it.
type FieldSpec struct {
	Resource string   // server, flavor, keypair, hypervisor, service, limits, quota_set, quota_class_set, ...
	Views    []string // the resource's views that carry the field
	Name     string
	// Since and Until bound the microversions that carry the field, both
	// included; Until is "" when the field is shown up to MaxVersion.
	Since, Until string
	// When is set for a field that only some items carry, and says which.
	When string
}

// Views are the views of each resource, as Fields names them.
func Views() map[string][]string {
	out := map[string][]string{}
	for _, t := range tables() {
		out[t.resource] = t.viewNames
	}
	return out
}

// Fields lists the rows of every view table, by resource and name.
func Fields() []FieldSpec {
	var out []FieldSpec
	for _, t := range tables() {
		out = append(out, t.specs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Name < out[j].Name
	})
	return out
}

type tableSpecs struct {
	resource  string
	viewNames []string
	specs     []FieldSpec
}

func tables() []tableSpecs {
	return []tableSpecs{
		specsOf(serverTable), specsOf(flavorTable), specsOf(keyPairTable),
		specsOf(hypervisorTable), specsOf(serviceTable), specsOf(limitsTable),
		specsOf(quotaSetTable), specsOf(quotaClassTable),
		specsOf(hypervisorStatsTable), specsOf(extensionTable), specsOf(serverUsageTable), specsOf(tenantUsageTable),
		specsOf(serverGroupTable), specsOf(instanceActionTable), specsOf(actionEventTable),
		specsOf(hostTable), specsOf(hostResourceTable), specsOf(imageTable),
	}
}

func specsOf[T any](t *table[T]) tableSpecs {
	out := tableSpecs{resource: t.resource, viewNames: t.views}
	for _, f := range t.fields {
		s := FieldSpec{Resource: t.resource, Name: f.name, Since: MinVersion, When: f.when}
		if f.since != (core.Microversion{}) {
			s.Since = f.since.String()
		}
		if f.until != (core.Microversion{}) {
			s.Until = f.until.String()
		}
		for i, name := range t.views {
			if f.in&(1<<i) != 0 {
				s.Views = append(s.Views, name)
			}
		}
		out.specs = append(out.specs, s)
	}
	return out
}

// String is the row as a line of a table: name, range and views.
func (s FieldSpec) String() string {
	until := s.Until
	if until == "" {
		until = "…"
	}
	return s.Resource + "." + s.Name + " " + s.Since + "–" + until + " [" + strings.Join(s.Views, " ") + "]"
}
