package archtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

// readmeLayout returns README.md's layout block (the first code block of
// its "## Development" section) and the folder each of its lines is about.
func readmeLayout(t *testing.T) (string, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Development\n")
	if i < 0 {
		t.Fatal("README.md has no ## Development section")
	}
	s = s[i:]
	start := strings.Index(s, "\n```\n")
	end := strings.Index(s[start+5:], "\n```")
	if start < 0 || end < 0 {
		t.Fatal("README.md's Development section has no code block")
	}
	block := s[start+5 : start+5+end]
	listed := map[string]bool{}
	for _, l := range strings.Split(block, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, " ") { // an indented line goes on the one before
			listed[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	return block, listed
}

// TestReadmeLayoutMatchesThePackages: every folder README.md's layout
// names exists, and every package of the module is in it: named on a line
// of its own, mentioned in a line, or in a listed folder that is no package
// itself (a group such as e2e/'s tiers). Packages of tests only need no line.
func TestReadmeLayoutMatchesThePackages(t *testing.T) {
	block, listed := readmeLayout(t)
	for dir := range listed {
		if _, err := os.Stat("../" + dir); err != nil {
			t.Errorf("README.md's layout names %s/, which does not exist", dir)
		}
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,GoFiles", mod+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	isPkg := map[string]bool{}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			GoFiles    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
		isPkg[rel] = true
		if len(p.GoFiles) > 0 && rel != "" {
			pkgs = append(pkgs, rel)
		}
	}
	for _, p := range pkgs {
		if listed[p] || regexp.MustCompile(`(^|[\s(,;])`+regexp.QuoteMeta(p)+`/?([\s:),;]|$)`).MatchString(block) {
			continue
		}
		anc := path.Dir(p)
		for anc != "." && !listed[anc] {
			anc = path.Dir(anc)
		}
		if anc != "." && !isPkg[anc] {
			continue // in a listed group of packages
		}
		t.Errorf("README.md's layout does not say what %s/ holds", p)
	}
}
