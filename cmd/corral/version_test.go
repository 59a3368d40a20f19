package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

func TestVersion(t *testing.T) {
	old, oldCommit := version, commit
	t.Cleanup(func() { version, commit = old, oldCommit })
	version, commit = "v9.9.9", "abc123"
	types := fsm.CommandTypes()
	top := int(types[len(types)-1])
	highest := strconv.Itoa(top)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"v9.9.9", "abc123", "go1.", "command types: " + fsm.KnownCommands(),
			"(highest " + highest + ")", "snapshot format: 5 ", "else 2", "reads 1-5", "entry encodings: json, msgpack"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v printed %q, want %q in it", args, out, want)
			}
		}
	}
	out, err := runCLI(t, "version", "-f", "json")
	if err != nil {
		t.Fatalf("json: %v %q", err, out)
	}
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("json: %v %q", err, out)
	}
	if !strings.HasPrefix(b.GoVersion, "go1.") || b.HighestCommand != top ||
		b.Commands != fsm.KnownCommands() || b.SnapshotFormat != fsm.SnapshotVersion || b.SnapshotFormatBase != 2 ||
		strings.Join(b.Encodings, ",") != "json,msgpack" {
		t.Fatalf("json: %+v", b)
	}
	// Without link-time values the build info or "devel" fills in.
	version, commit = "", ""
	if b := currentBuild(); b.Version == "" || b.Commit == "" {
		t.Fatalf("fallback %+v", b)
	}
}
