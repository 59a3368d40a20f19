package api

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenAPIMatchesRouteTable: every /v1 route of the route table is in
// the OpenAPI document, and the document lists no operation the server
// does not have.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	s := &Server{cfg: Config{Gatherer: prometheus.NewRegistry()}}
	routes := map[string]bool{}
	s.roles = map[string]Role{}
	for _, r := range s.routeTable() {
		s.roles[r.method+" "+r.path] = r.role
		if documentedRoute(r.path) {
			routes[r.method+" "+r.path] = true
		}
	}
	var missing, extra []string
	for k := range routes {
		if _, ok := openAPIOps[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range openAPIOps {
		if !routes[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from the OpenAPI document (add them to openAPIOps in openapi.go):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("operations documented that the server does not have:\n  %s", strings.Join(extra, "\n  "))
	}

	// The served document carries each operation once, with its role.
	doc := s.openAPIDoc()
	raw, err := json.Marshal(doc)
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
			if op["x-corral-role"] == nil && !(method == "get" && path == OpenAPIPath && s.roles["GET "+OpenAPIPath] == rolePublic) {
				t.Errorf("%s %s has no role", method, path)
			}
		}
	}
	if back.OpenAPI != "3.0.3" || n != len(openAPIOps) {
		t.Fatalf("document: version %q, %d operations, want %d", back.OpenAPI, n, len(openAPIOps))
	}
}
