package sim_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/ironic/sim"
)

// names lists /v1/nodes/detail with query and returns the names in order.
func (c *client) names(query string) []string {
	c.t.Helper()
	code, m, _ := c.do(http.MethodGet, "/v1/nodes/detail?"+query, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET ?%s: HTTP %d %v", query, code, m)
	}
	var out []string
	for _, n := range m["nodes"].([]any) {
		out = append(out, n.(map[string]any)["name"].(string))
	}
	return out
}

// The listing orders by sort_key then id with Ironic's pagination
// criteria, as measured on Ironic 21.4 (SQLite): nulls sort first
// ascending, a marker with a value drops the null ones, a null marker
// keeps only the lower (desc) ids. Seeded nodes out of enroll carry an
// updated_at; an enrolled one does not until its first change.
func TestSortKeysAndMarkers(t *testing.T) {
	s, c := start(t, sim.Options{})
	s.Seed([]sim.NodeSpec{{Name: "n1", ProvisionState: "enroll"}, {Name: "n2"}, {Name: "n3", ProvisionState: "enroll"}, {Name: "n4"}})
	t0 := time.Now()
	s.RenameNodeAt("n2", "n2", t0.Add(2*time.Second))
	s.RenameNodeAt("n4", "n4", t0.Add(time.Second))
	uuidOf := func(name string) string {
		_, m, _ := c.do(http.MethodGet, "/v1/nodes/"+name, nil)
		return m["uuid"].(string)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"sort_key=updated_at&sort_dir=desc", []string{"n2", "n4", "n3", "n1"}},
		{"sort_key=updated_at&sort_dir=asc", []string{"n1", "n3", "n4", "n2"}},
		{"sort_key=updated_at&sort_dir=desc&marker=" + uuidOf("n2"), []string{"n4"}},
		{"sort_key=updated_at&sort_dir=desc&marker=" + uuidOf("n3"), []string{"n2", "n1"}},
		{"sort_key=created_at&sort_dir=desc", []string{"n4", "n3", "n2", "n1"}},
		{"sort_key=created_at&sort_dir=desc&marker=" + uuidOf("n3"), []string{"n2", "n1"}},
		{"sort_dir=desc", []string{"n4", "n3", "n2", "n1"}},
		{"sort_key=name&limit=2", []string{"n1", "n2"}},
	} {
		if got := c.names(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("?%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	for q, want := range map[string]string{
		"sort_key=bogus":          `The sort_key value "bogus" is an invalid field for sorting`,
		"sort_key=properties":     "The sort_key value properties is an invalid field for sorting",
		"sort_key=id&sort_dir=up": "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
	} {
		code, m, _ := c.do(http.MethodGet, "/v1/nodes?"+q, nil)
		if code != http.StatusBadRequest || fault(m) != want {
			t.Errorf("?%s: HTTP %d %q, want 400 %q", q, code, fault(m), want)
		}
	}
	// Equal timestamps: the id breaks the tie, on every page.
	same := t0.Add(3 * time.Second)
	s.RenameNodeAt("n1", "n1", same)
	s.RenameNodeAt("n3", "n3", same)
	var paged []string
	marker := ""
	for range 5 {
		q := "sort_key=updated_at&sort_dir=desc&limit=1"
		if marker != "" {
			q += "&marker=" + uuidOf(marker)
		}
		page := c.names(q)
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		marker = page[0]
	}
	if want := []string{"n3", "n1", "n2", "n4"}; !slices.Equal(paged, want) {
		t.Errorf("paging one by one through equal timestamps: %v, want %v", paged, want)
	}
	// NullsLast: PostgreSQL's order.
	s2, c2 := start(t, sim.Options{NullsLast: true})
	s2.Seed([]sim.NodeSpec{{Name: "a", ProvisionState: "enroll"}, {Name: "b"}})
	if got := c2.names("sort_key=updated_at&sort_dir=desc"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("nulls last, by updated_at desc: %v", got)
	}
}

// Every change of a node bumps its updated_at, VIFs included.
func TestChangesBumpUpdatedAt(t *testing.T) {
	s, c := start(t, sim.Options{})
	s.Seed([]sim.NodeSpec{{Name: "n1", ProvisionState: "enroll"}, {Name: "n2", ProvisionState: "enroll"}})
	if got := c.names("sort_key=updated_at&sort_dir=desc&limit=1"); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("no node updated: %v", got)
	}
	for _, step := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/nodes/n1/vifs", map[string]any{"id": "vif-1"}},
		{http.MethodPut, "/v1/nodes/n1/traits", map[string]any{"traits": []string{"CUSTOM_A"}}},
		{http.MethodPatch, "/v1/nodes/n1", []map[string]any{{"op": "add", "path": "/extra/a", "value": "b"}}},
	} {
		_, m, _ := c.do(http.MethodGet, "/v1/nodes/n1", nil)
		before := m["updated_at"]
		time.Sleep(time.Millisecond) // the timestamps have microseconds
		if code, m, _ := c.do(step.method, step.path, step.body); code >= 300 {
			t.Fatalf("%s %s: HTTP %d %v", step.method, step.path, code, m)
		}
		_, m, _ = c.do(http.MethodGet, "/v1/nodes/n1", nil)
		if m["updated_at"] == nil || m["updated_at"] == before {
			t.Fatalf("%s %s left updated_at at %v", step.method, step.path, before)
		}
	}
}
