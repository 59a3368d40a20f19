package main

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	old, oldCommit := version, commit
	t.Cleanup(func() { version, commit = old, oldCommit })
	version, commit = "v9.9.9", "abc123"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out, "v9.9.9") || !strings.Contains(out, "abc123") || !strings.Contains(out, "go1.") {
			t.Errorf("%v printed %q", args, out)
		}
	}
	out, err := runCLI(t, "version", "-f", "json")
	if err != nil || !strings.Contains(out, `"go_version": "go1.`) {
		t.Fatalf("json: %v %q", err, out)
	}
	// Without link-time values the build info or "devel" fills in.
	version, commit = "", ""
	if b := currentBuild(); b.Version == "" || b.Commit == "" {
		t.Fatalf("fallback %+v", b)
	}
}
