package archtest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureListsEveryImport: docs/architecture.md lists, between
// its <!-- imports --> markers, exactly the imports between corral's
// packages that `go list` reports (test files aside), one line a package.
func TestArchitectureListsEveryImport(t *testing.T) {
	b, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- imports -->"), strings.Index(s, "<!-- /imports -->")
	if i < 0 || j < i {
		t.Fatal("docs/architecture.md has no <!-- imports --> list")
	}
	line := regexp.MustCompile("^- `([^`]+)` → (.*)$")
	name := regexp.MustCompile("`([^`]+)`")
	documented := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(s[i+len("<!-- imports -->"):j]), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("docs/architecture.md: unreadable import line %q", l)
			continue
		}
		var to []string
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			to = append(to, n[1])
		}
		documented[m[1]] = to
	}
	for path, p := range listPackages(t) {
		if path == "" || !p.hasCode {
			continue
		}
		var actual []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, mod+"/"); ok {
				actual = append(actual, rel)
			}
		}
		slices.Sort(actual)
		doc, ok := documented[path]
		delete(documented, path)
		switch {
		case !ok:
			t.Errorf("docs/architecture.md lists no imports of %s (it imports %v)", path, actual)
		case !slices.Equal(doc, actual):
			t.Errorf("docs/architecture.md says %s imports %v; it imports %v", path, doc, actual)
		}
	}
	for path := range documented {
		t.Errorf("docs/architecture.md lists %s, which is no package with code", path)
	}
}
