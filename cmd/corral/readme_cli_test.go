package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// readmeCLI returns the lines of README.md's CLI list: the code block of
// its "## CLI" section whose lines start with "corral ".
func readmeCLI(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## CLI\n")
	if i < 0 {
		t.Fatal("README.md has no ## CLI section")
	}
	s = s[i:]
	start := strings.Index(s, "\n```\n")
	end := strings.Index(s[start+5:], "\n```")
	if start < 0 || end < 0 {
		t.Fatal("README.md's CLI section has no code block")
	}
	var lines [][]string
	for _, l := range strings.Split(s[start+5:start+5+end], "\n") {
		l, _, _ = strings.Cut(l, "  ") // what follows two spaces describes the command
		if f := strings.Fields(l); len(f) > 1 && f[0] == "corral" {
			lines = append(lines, f)
		}
	}
	return lines
}

// word is a command name as the README writes one, alternatives with "|".
var word = regexp.MustCompile(`^[a-z][a-z-]*(\|[a-z][a-z-]*)*$`)

// TestReadmeCLIListsEveryCommand: every command of the CLI is in README's
// CLI list, and every command the list names exists.
func TestReadmeCLIListsEveryCommand(t *testing.T) {
	lines := readmeCLI(t)
	root := newRootCmd()
	// The command paths each README line names: its leading command words,
	// and the other alternatives of "a | b | c" lists after them.
	named := map[string]bool{}
	for _, f := range lines {
		path := []string{"corral"}
		i := 1
		for ; i < len(f) && word.MatchString(f[i]); i++ {
			alts := strings.Split(f[i], "|")
			if len(alts) > 1 || i == len(f)-1 || !word.MatchString(f[i+1]) {
				for _, a := range alts {
					named[strings.Join(append(slices.Clone(path), a), " ")] = true
				}
			}
			path = append(path, alts[0])
		}
		named[strings.Join(path, " ")] = true
		for ; i < len(f); i++ {
			if f[i] == "|" && i+1 < len(f) && word.MatchString(f[i+1]) {
				named[strings.Join(append(slices.Clone(path[:len(path)-1]), f[i+1]), " ")] = true
			}
		}
		if c, rest, err := root.Find(path[1:]); err != nil || len(rest) > 0 || c == root {
			t.Errorf("README.md's CLI list names %q, which is no command", strings.Join(path, " "))
		}
	}
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		for _, s := range c.Commands() {
			if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
				continue
			}
			p := path + " " + s.Name()
			if s.Runnable() && !named[p] {
				t.Errorf("README.md's CLI list lacks %q", p)
			}
			walk(s, p)
		}
	}
	walk(root, "corral")
}
