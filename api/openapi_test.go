package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/api/core"
)

// TestOpenAPIMatchesRouteTable: every /v1 route of the route table is
// documented in it, no other route is, and the document carries each
// documented operation once, with its role.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	srv, err := core.NewServer(core.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(Config{}, nil)
	s.core = srv
	documented := 0
	for _, r := range s.routeTable() {
		key := r.method + " " + r.path
		switch {
		case documentedRoute(r.path) && r.doc == nil:
			t.Errorf("%s has no OpenAPI summary: give its line in the route table a doc(...)", key)
		case !documentedRoute(r.path) && r.doc != nil:
			t.Errorf("%s is documented, but it is no route of the admin API", key)
		case r.doc != nil:
			documented++
			if r.doc.summary == "" || r.doc.tag == "" {
				t.Errorf("%s: documented without a summary or a tag", key)
			}
		}
	}

	// The served document carries each operation once, with its role.
	raw, err := json.Marshal(s.openAPIDoc())
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, ops := range back.Paths {
		if strings.Contains(path, ":") {
			t.Errorf("path %s keeps an echo parameter", path)
		}
		for method, op := range ops {
			n++
			if op["x-corral-role"] == nil {
				t.Errorf("%s %s has no role", method, path)
			}
		}
	}
	if back.OpenAPI != "3.0.3" || n != documented || n == 0 {
		t.Fatalf("document: version %q, %d operations, want %d", back.OpenAPI, n, documented)
	}
}
